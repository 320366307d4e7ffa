-- MCP servers whose tools the engine calls (execution.type "mcp").
-- Portable to MySQL 8 and MariaDB 10.11, like 00001_init.sql.

-- +goose Up
CREATE TABLE sys_ai_mcp_server (
  mcp_id            VARCHAR(64)    CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  name              VARCHAR(64)    CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  transport         VARCHAR(16)    NOT NULL COMMENT 'streamable_http, sse or stdio',
  url               VARCHAR(1024)  NULL,
  command           JSON           NULL COMMENT 'argv of a stdio server',
  headers           JSON           NULL COMMENT 'static request headers',
  auth_config       JSON           NULL COMMENT 'a plugin auth_config: credentials resolved per user',
  status            CHAR(1)        NOT NULL DEFAULT '0' COMMENT '0 enabled, 1 disabled',
  tools_cache       JSON           NULL COMMENT 'the last tools/list answer',
  tools_cached_time DATETIME       NULL,
  create_by         VARCHAR(64)    DEFAULT '',
  create_time       DATETIME       NULL,
  update_by         VARCHAR(64)    DEFAULT '',
  update_time       DATETIME       NULL,
  remark            VARCHAR(500)   NULL,
  PRIMARY KEY (mcp_id),
  UNIQUE KEY uk_sys_ai_mcp_server_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci COMMENT='registered MCP servers';

-- +goose Down
DROP TABLE IF EXISTS sys_ai_mcp_server;
