-- The SQLite twin of mysql/00002_mcp.sql (JSON columns as TEXT, see
-- 00001_init.sql).

-- +goose Up
CREATE TABLE sys_ai_mcp_server (
  mcp_id            VARCHAR(64)    NOT NULL PRIMARY KEY,
  name              VARCHAR(64)    NOT NULL,
  transport         VARCHAR(16)    NOT NULL,
  url               VARCHAR(1024)  NULL,
  command           TEXT           NULL,
  headers           TEXT           NULL,
  auth_config       TEXT           NULL,
  status            CHAR(1)        NOT NULL DEFAULT '0',
  tools_cache       TEXT           NULL,
  tools_cached_time DATETIME       NULL,
  create_by         VARCHAR(64)    DEFAULT '',
  create_time       DATETIME       NULL,
  update_by         VARCHAR(64)    DEFAULT '',
  update_time       DATETIME       NULL,
  remark            VARCHAR(500)   NULL
);
CREATE UNIQUE INDEX uk_sys_ai_mcp_server_name ON sys_ai_mcp_server (name);

-- +goose Down
DROP TABLE IF EXISTS sys_ai_mcp_server;
