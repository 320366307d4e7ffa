-- An MCP server an administrator vouches for (issue 48 point 2): only a
-- trusted server's annotations may lower its imported tools' class
-- (readOnlyHint → not consequential); an untrusted one's may only raise
-- it. Servers registered before are untrusted, so the suggestions their
-- imports took from readOnlyHint ("not consequential") are dropped: their
-- tools are consequential again until an administrator says otherwise
-- (the consequential column, which this leaves alone, or a trusted
-- server re-imported).

-- +goose Up
ALTER TABLE sys_ai_mcp_server
  ADD COLUMN trusted TINYINT(1) NOT NULL DEFAULT 0 COMMENT '1: its tools'' annotations may lower their class (issue 48)';
UPDATE sys_ai_plugin
   SET execution_config = JSON_REMOVE(execution_config, '$.consequential_hint')
 WHERE JSON_UNQUOTE(JSON_EXTRACT(execution_config, '$.execution.type')) = 'mcp'
   AND JSON_TYPE(JSON_EXTRACT(execution_config, '$.consequential_hint')) = 'BOOLEAN'
   AND JSON_UNQUOTE(JSON_EXTRACT(execution_config, '$.consequential_hint')) = 'false';

-- +goose Down
ALTER TABLE sys_ai_mcp_server DROP COLUMN trusted;
