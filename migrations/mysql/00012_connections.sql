-- Connections (issue 34): OAuth providers the administrator registers, the
-- authorization flows in progress, and each user's connection to a
-- provider. Secrets (the client secret, the PKCE verifier, access and
-- refresh tokens) are stored in the vault's format (auth/vault.go, "v1:<kid>:
-- <payload>") with their key id beside them, and re-encrypted by
-- `cred rotate`; handles, states, cookie bindings and CSRF tokens are kept
-- as hex SHA-256 only. Providers are followed by every replica through the
-- 'oauth_provider' change counter; flows and connections are read where
-- used, so that a callback may land on any replica and a refresh is
-- claimed in the row (refresh_owner, version, refreshing_until).

-- +goose Up
CREATE TABLE sys_ai_oauth_provider (
  provider_id       BIGINT        NOT NULL AUTO_INCREMENT,
  provider_name     VARCHAR(64)   CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  authorization_url VARCHAR(2048) NOT NULL,
  token_url         VARCHAR(2048) NOT NULL,
  revocation_url    VARCHAR(2048) NOT NULL DEFAULT '',
  issuer            VARCHAR(2048) NOT NULL DEFAULT '',
  scopes            JSON          NULL,
  client_id         VARCHAR(512)  NOT NULL DEFAULT '',
  client_secret     TEXT          NULL COMMENT 'v1:<kid>:<payload>, AAD "0:oauth_provider/<name>/client_secret"',
  key_id            VARCHAR(16)   NULL,
  pkce              CHAR(1)       NOT NULL DEFAULT '1',
  extra_params      JSON          NULL,
  status            CHAR(1)       NOT NULL DEFAULT '0' COMMENT '0 enabled, 1 disabled',
  create_by         VARCHAR(64)   DEFAULT '',
  create_time       DATETIME      NULL,
  update_by         VARCHAR(64)   DEFAULT '',
  update_time       DATETIME      NULL,
  remark            VARCHAR(500)  NULL,
  PRIMARY KEY (provider_id),
  UNIQUE KEY uk_sys_ai_oauth_provider_name (provider_name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci COMMENT='OAuth providers users connect to';

CREATE TABLE sys_ai_oauth_flow (
  flow_id          CHAR(32)      NOT NULL COMMENT 'random; names the flow cookie',
  handle_hash      CHAR(64)      NOT NULL,
  state_hash       CHAR(64)      NOT NULL,
  user_id          BIGINT        NOT NULL,
  provider_name    VARCHAR(64)   CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  display_name     VARCHAR(255)  NOT NULL DEFAULT '',
  phase            VARCHAR(16)   NOT NULL COMMENT 'created, started, exchanging, obtained, done',
  verifier         TEXT          NULL,
  binding_hash     CHAR(64)      NULL COMMENT 'the flow cookie',
  csrf_hash        CHAR(64)      NULL,
  access_token     TEXT          NULL,
  refresh_token    TEXT          NULL,
  key_id           VARCHAR(16)   NULL,
  scopes           JSON          NULL,
  token_expires_at DATETIME      NULL,
  account          VARCHAR(255)  NOT NULL DEFAULT '',
  expires_at       DATETIME      NOT NULL,
  create_time      DATETIME      NULL,
  PRIMARY KEY (flow_id),
  UNIQUE KEY uk_sys_ai_oauth_flow_handle (handle_hash),
  UNIQUE KEY uk_sys_ai_oauth_flow_state (state_hash),
  KEY idx_sys_ai_oauth_flow_expires (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci COMMENT='OAuth authorization flows in progress';

CREATE TABLE sys_ai_oauth_connection (
  connection_id    BIGINT        NOT NULL AUTO_INCREMENT,
  user_id          BIGINT        NOT NULL,
  provider_name    VARCHAR(64)   CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  access_token     TEXT          NULL,
  refresh_token    TEXT          NULL,
  key_id           VARCHAR(16)   NULL,
  scopes           JSON          NULL,
  expires_at       DATETIME      NULL,
  state            VARCHAR(16)   NOT NULL COMMENT 'connected or broken',
  broken_reason    VARCHAR(500)  NOT NULL DEFAULT '',
  account          VARCHAR(255)  NOT NULL DEFAULT '',
  version          BIGINT        NOT NULL DEFAULT 0 COMMENT 'moves with every write of the tokens or the claim',
  refresh_owner    VARCHAR(64)   NULL COMMENT 'the replica refreshing, while refreshing_until is ahead',
  refreshing_until DATETIME      NULL,
  refreshed_at     DATETIME      NULL,
  connected_at     DATETIME      NULL,
  update_time      DATETIME      NULL,
  PRIMARY KEY (connection_id),
  UNIQUE KEY uk_sys_ai_oauth_connection (user_id, provider_name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci COMMENT='users connected to OAuth providers';

INSERT INTO sys_ai_change (scope, version) VALUES ('oauth_provider', 0);

CREATE TRIGGER trg_sys_ai_oauth_provider_insert AFTER INSERT ON sys_ai_oauth_provider FOR EACH ROW UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'oauth_provider';

CREATE TRIGGER trg_sys_ai_oauth_provider_update AFTER UPDATE ON sys_ai_oauth_provider FOR EACH ROW UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'oauth_provider';

CREATE TRIGGER trg_sys_ai_oauth_provider_delete AFTER DELETE ON sys_ai_oauth_provider FOR EACH ROW UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'oauth_provider';

-- +goose Down
DROP TRIGGER IF EXISTS trg_sys_ai_oauth_provider_insert;
DROP TRIGGER IF EXISTS trg_sys_ai_oauth_provider_update;
DROP TRIGGER IF EXISTS trg_sys_ai_oauth_provider_delete;
DELETE FROM sys_ai_change WHERE scope = 'oauth_provider';
DROP TABLE IF EXISTS sys_ai_oauth_connection;
DROP TABLE IF EXISTS sys_ai_oauth_flow;
DROP TABLE IF EXISTS sys_ai_oauth_provider;
