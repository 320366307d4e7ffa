-- The SQLite twin of mysql/00012_connections.sql.

-- +goose Up
CREATE TABLE sys_ai_oauth_provider (
  provider_id       INTEGER       PRIMARY KEY AUTOINCREMENT,
  provider_name     VARCHAR(64)   NOT NULL UNIQUE,
  authorization_url VARCHAR(2048) NOT NULL,
  token_url         VARCHAR(2048) NOT NULL,
  revocation_url    VARCHAR(2048) NOT NULL DEFAULT '',
  issuer            VARCHAR(2048) NOT NULL DEFAULT '',
  scopes            JSON          NULL,
  client_id         VARCHAR(512)  NOT NULL DEFAULT '',
  client_secret     TEXT          NULL,
  key_id            VARCHAR(16)   NULL,
  pkce              CHAR(1)       NOT NULL DEFAULT '1',
  extra_params      JSON          NULL,
  status            CHAR(1)       NOT NULL DEFAULT '0',
  create_by         VARCHAR(64)   DEFAULT '',
  create_time       DATETIME      NULL,
  update_by         VARCHAR(64)   DEFAULT '',
  update_time       DATETIME      NULL,
  remark            VARCHAR(500)  NULL
);

CREATE TABLE sys_ai_oauth_flow (
  flow_id          CHAR(32)      PRIMARY KEY,
  handle_hash      CHAR(64)      NOT NULL UNIQUE,
  state_hash       CHAR(64)      NOT NULL UNIQUE,
  user_id          BIGINT        NOT NULL,
  provider_name    VARCHAR(64)   NOT NULL,
  display_name     VARCHAR(255)  NOT NULL DEFAULT '',
  phase            VARCHAR(16)   NOT NULL,
  verifier         TEXT          NULL,
  binding_hash     CHAR(64)      NULL,
  csrf_hash        CHAR(64)      NULL,
  access_token     TEXT          NULL,
  refresh_token    TEXT          NULL,
  key_id           VARCHAR(16)   NULL,
  scopes           JSON          NULL,
  token_expires_at DATETIME      NULL,
  account          VARCHAR(255)  NOT NULL DEFAULT '',
  expires_at       DATETIME      NOT NULL,
  create_time      DATETIME      NULL
);

CREATE INDEX idx_sys_ai_oauth_flow_expires ON sys_ai_oauth_flow (expires_at);

CREATE TABLE sys_ai_oauth_connection (
  connection_id    INTEGER       PRIMARY KEY AUTOINCREMENT,
  user_id          BIGINT        NOT NULL,
  provider_name    VARCHAR(64)   NOT NULL,
  access_token     TEXT          NULL,
  refresh_token    TEXT          NULL,
  key_id           VARCHAR(16)   NULL,
  scopes           JSON          NULL,
  expires_at       DATETIME      NULL,
  state            VARCHAR(16)   NOT NULL,
  broken_reason    VARCHAR(500)  NOT NULL DEFAULT '',
  account          VARCHAR(255)  NOT NULL DEFAULT '',
  version          BIGINT        NOT NULL DEFAULT 0,
  refresh_owner    VARCHAR(64)   NULL,
  refreshing_until DATETIME      NULL,
  refreshed_at     DATETIME      NULL,
  connected_at     DATETIME      NULL,
  update_time      DATETIME      NULL,
  UNIQUE (user_id, provider_name)
);

INSERT INTO sys_ai_change (scope, version) VALUES ('oauth_provider', 0);

-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_oauth_provider_insert AFTER INSERT ON sys_ai_oauth_provider FOR EACH ROW
BEGIN
  UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'oauth_provider';
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_oauth_provider_update AFTER UPDATE ON sys_ai_oauth_provider FOR EACH ROW
BEGIN
  UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'oauth_provider';
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_oauth_provider_delete AFTER DELETE ON sys_ai_oauth_provider FOR EACH ROW
BEGIN
  UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'oauth_provider';
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER IF EXISTS trg_sys_ai_oauth_provider_insert;
DROP TRIGGER IF EXISTS trg_sys_ai_oauth_provider_update;
DROP TRIGGER IF EXISTS trg_sys_ai_oauth_provider_delete;
DELETE FROM sys_ai_change WHERE scope = 'oauth_provider';
DROP TABLE IF EXISTS sys_ai_oauth_connection;
DROP TABLE IF EXISTS sys_ai_oauth_flow;
DROP TABLE IF EXISTS sys_ai_oauth_provider;
