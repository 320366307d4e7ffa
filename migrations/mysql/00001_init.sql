-- Portable to MySQL 8 and MariaDB 10.11: no dialect-only syntax.
-- Identifier columns use utf8mb4_bin so that uniqueness, lookups and ORDER BY
-- are exact and byte-ordered, as they are on SQLite.

-- +goose Up
CREATE TABLE sys_ai_plugin (
  plugin_id            BIGINT        NOT NULL AUTO_INCREMENT,
  name                 VARCHAR(64)   CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  title                VARCHAR(255)  NULL,
  description          TEXT          NULL,
  icon_url             VARCHAR(512)  NULL,
  parameter_schema     JSON          NULL,
  execution_config     JSON          NULL,
  status               CHAR(1)       NOT NULL DEFAULT '0' COMMENT '0 enabled, 1 disabled',
  required_credentials JSON          NULL,
  source_id            BIGINT        NULL,
  source_key           VARCHAR(512)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
  content_hash         CHAR(64)      NULL,
  create_by            VARCHAR(64)   DEFAULT '',
  create_time          DATETIME      NULL,
  update_by            VARCHAR(64)   DEFAULT '',
  update_time          DATETIME      NULL,
  remark               VARCHAR(500)  NULL,
  PRIMARY KEY (plugin_id),
  UNIQUE KEY uk_sys_ai_plugin_name (name),
  KEY idx_sys_ai_plugin_source (source_id, source_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci COMMENT='AI plugins (tools)';

CREATE TABLE sys_user_credential (
  credential_id    BIGINT        NOT NULL AUTO_INCREMENT,
  user_id          BIGINT        NOT NULL,
  credential_key   VARCHAR(128)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  credential_value TEXT          NOT NULL COMMENT 'v1:<kid>:<base64(nonce||ciphertext||tag)>',
  key_id           VARCHAR(32)   NOT NULL,
  create_by        VARCHAR(64)   DEFAULT '',
  create_time      DATETIME      NULL,
  update_by        VARCHAR(64)   DEFAULT '',
  update_time      DATETIME      NULL,
  remark           VARCHAR(500)  NULL,
  PRIMARY KEY (credential_id),
  UNIQUE KEY uk_sys_user_credential_user_key (user_id, credential_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci COMMENT='per-user credentials, encrypted at rest';

CREATE TABLE sys_ai_token (
  token_id       BIGINT        NOT NULL AUTO_INCREMENT,
  user_id        BIGINT        NOT NULL,
  token_name     VARCHAR(128)  NULL,
  token_hash     CHAR(64)      CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'hex sha256 of the token',
  token_prefix   VARCHAR(16)   NULL,
  expire_time    DATETIME      NULL,
  last_used_time DATETIME      NULL,
  create_by      VARCHAR(64)   DEFAULT '',
  create_time    DATETIME      NULL,
  update_by      VARCHAR(64)   DEFAULT '',
  update_time    DATETIME      NULL,
  remark         VARCHAR(500)  NULL,
  PRIMARY KEY (token_id),
  UNIQUE KEY uk_sys_ai_token_hash (token_hash),
  KEY idx_sys_ai_token_user (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci COMMENT='per-user API tokens, stored hashed';

CREATE TABLE sys_ai_execution (
  execution_id  CHAR(36)       CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  run_id        VARCHAR(36)    CHARACTER SET ascii COLLATE ascii_bin NULL,
  plugin_name   VARCHAR(64)    CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  user_id       BIGINT         NULL,
  status        VARCHAR(16)    NOT NULL COMMENT 'ok, error or refused',
  http_status   INT            NOT NULL DEFAULT 0,
  latency_ms    BIGINT         NOT NULL DEFAULT 0,
  attempts      INT            NOT NULL DEFAULT 0,
  error_class   VARCHAR(64)    NULL,
  error_message VARCHAR(1000)  NULL,
  create_time   DATETIME(3)    NOT NULL,
  PRIMARY KEY (execution_id),
  KEY idx_sys_ai_execution_plugin_time (plugin_name, create_time),
  KEY idx_sys_ai_execution_user_time (user_id, create_time),
  KEY idx_sys_ai_execution_run (run_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci COMMENT='tool execution log; never holds a secret';

CREATE TABLE sys_ai_import_source (
  source_id       BIGINT         NOT NULL AUTO_INCREMENT,
  kind            VARCHAR(16)    NULL COMMENT 'openapi or mcp',
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
  remark          VARCHAR(500)   NULL,
  PRIMARY KEY (source_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci COMMENT='imported OpenAPI documents and MCP servers';

-- +goose Down
DROP TABLE IF EXISTS sys_ai_import_source;
DROP TABLE IF EXISTS sys_ai_execution;
DROP TABLE IF EXISTS sys_ai_token;
DROP TABLE IF EXISTS sys_user_credential;
DROP TABLE IF EXISTS sys_ai_plugin;
