-- The SQLite twin of mysql/00024_mcp_server_trusted.sql.

-- +goose Up
ALTER TABLE sys_ai_mcp_server ADD COLUMN trusted INTEGER NOT NULL DEFAULT 0;
UPDATE sys_ai_plugin
   SET execution_config = json_remove(execution_config, '$.consequential_hint')
 WHERE json_extract(execution_config, '$.execution.type') = 'mcp'
   AND json_type(execution_config, '$.consequential_hint') = 'false';

-- +goose Down
ALTER TABLE sys_ai_mcp_server DROP COLUMN trusted;
