-- The SQLite twin of mysql/00001_init.sql. JSON columns are TEXT because a
-- column declared JSON gets NUMERIC affinity in SQLite, which would turn a
-- JSON scalar such as 123 into an integer. Times are DATETIME so that the
-- driver scans them back into time.Time (it only recognises the bare type
-- name, so no DATETIME(3)); they are stored as UTC text.

-- +goose Up
CREATE TABLE sys_ai_plugin (
  plugin_id            INTEGER       PRIMARY KEY AUTOINCREMENT,
  name                 VARCHAR(64)   NOT NULL,
  title                VARCHAR(255)  NULL,
  description          TEXT          NULL,
  icon_url             VARCHAR(512)  NULL,
  parameter_schema     TEXT          NULL,
  execution_config     TEXT          NULL,
  status               CHAR(1)       NOT NULL DEFAULT '0',
  required_credentials TEXT          NULL,
  source_id            BIGINT        NULL,
  source_key           VARCHAR(512)  NULL,
  content_hash         CHAR(64)      NULL,
  create_by            VARCHAR(64)   DEFAULT '',
  create_time          DATETIME      NULL,
  update_by            VARCHAR(64)   DEFAULT '',
  update_time          DATETIME      NULL,
  remark               VARCHAR(500)  NULL
);
CREATE UNIQUE INDEX uk_sys_ai_plugin_name ON sys_ai_plugin (name);
CREATE INDEX idx_sys_ai_plugin_source ON sys_ai_plugin (source_id, source_key);

CREATE TABLE sys_user_credential (
  credential_id    INTEGER       PRIMARY KEY AUTOINCREMENT,
  user_id          BIGINT        NOT NULL,
  credential_key   VARCHAR(128)  NOT NULL,
  credential_value TEXT          NOT NULL,
  key_id           VARCHAR(32)   NOT NULL,
  create_by        VARCHAR(64)   DEFAULT '',
  create_time      DATETIME      NULL,
  update_by        VARCHAR(64)   DEFAULT '',
  update_time      DATETIME      NULL,
  remark           VARCHAR(500)  NULL
);
CREATE UNIQUE INDEX uk_sys_user_credential_user_key ON sys_user_credential (user_id, credential_key);

CREATE TABLE sys_ai_token (
  token_id       INTEGER       PRIMARY KEY AUTOINCREMENT,
  user_id        BIGINT        NOT NULL,
  token_name     VARCHAR(128)  NULL,
  token_hash     CHAR(64)      NOT NULL,
  token_prefix   VARCHAR(16)   NULL,
  expire_time    DATETIME      NULL,
  last_used_time DATETIME      NULL,
  create_by      VARCHAR(64)   DEFAULT '',
  create_time    DATETIME      NULL,
  update_by      VARCHAR(64)   DEFAULT '',
  update_time    DATETIME      NULL,
  remark         VARCHAR(500)  NULL
);
CREATE UNIQUE INDEX uk_sys_ai_token_hash ON sys_ai_token (token_hash);
CREATE INDEX idx_sys_ai_token_user ON sys_ai_token (user_id);

CREATE TABLE sys_ai_execution (
  execution_id  CHAR(36)       NOT NULL PRIMARY KEY,
  run_id        VARCHAR(36)    NULL,
  plugin_name   VARCHAR(64)    NOT NULL,
  user_id       BIGINT         NULL,
  status        VARCHAR(16)    NOT NULL,
  http_status   INT            NOT NULL DEFAULT 0,
  latency_ms    BIGINT         NOT NULL DEFAULT 0,
  attempts      INT            NOT NULL DEFAULT 0,
  error_class   VARCHAR(64)    NULL,
  error_message VARCHAR(1000)  NULL,
  create_time   DATETIME       NOT NULL
);
CREATE INDEX idx_sys_ai_execution_plugin_time ON sys_ai_execution (plugin_name, create_time);
CREATE INDEX idx_sys_ai_execution_user_time ON sys_ai_execution (user_id, create_time);
CREATE INDEX idx_sys_ai_execution_run ON sys_ai_execution (run_id);

CREATE TABLE sys_ai_import_source (
  source_id       INTEGER        PRIMARY KEY AUTOINCREMENT,
  kind            VARCHAR(16)    NULL,
  location        VARCHAR(1024)  NULL,
  sha256          CHAR(64)       NULL,
  prefix          VARCHAR(64)    NULL,
  imported_time   DATETIME       NULL,
  operation_count INT            NULL,
  imported_count  INT            NULL,
  failed_count    INT            NULL,
  create_by       VARCHAR(64)    DEFAULT '',
  create_time     DATETIME       NULL,
  update_by       VARCHAR(64)    DEFAULT '',
  update_time     DATETIME       NULL,
  remark          VARCHAR(500)   NULL
);

-- +goose Down
DROP TABLE IF EXISTS sys_ai_import_source;
DROP TABLE IF EXISTS sys_ai_execution;
DROP TABLE IF EXISTS sys_ai_token;
DROP TABLE IF EXISTS sys_user_credential;
DROP TABLE IF EXISTS sys_ai_plugin;
