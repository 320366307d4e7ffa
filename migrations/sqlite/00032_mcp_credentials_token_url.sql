-- The SQLite twin of mysql/00032_mcp_credentials_token_url.sql.

-- +goose Up
ALTER TABLE sys_ai_mcp_server ADD COLUMN credentials_token_url TEXT NULL;
UPDATE sys_ai_mcp_server SET credentials_token_url = json_extract(auth_config, '$.oauth2.token_url')
  WHERE json_valid(auth_config) AND json_type(auth_config, '$.oauth2.token_url') = 'text';
DROP TRIGGER IF EXISTS trg_sys_ai_mcp_server_update;
-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_mcp_server_update AFTER UPDATE ON sys_ai_mcp_server FOR EACH ROW
WHEN NOT (NEW.name IS OLD.name AND NEW.transport IS OLD.transport AND NEW.url IS OLD.url AND NEW.command IS OLD.command AND NEW.headers IS OLD.headers AND NEW.auth_config IS OLD.auth_config AND NEW.status IS OLD.status AND NEW.credentials_url IS OLD.credentials_url AND NEW.credentials_token_url IS OLD.credentials_token_url)
BEGIN
  UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'mcp_server';
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER IF EXISTS trg_sys_ai_mcp_server_update;
-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_mcp_server_update AFTER UPDATE ON sys_ai_mcp_server FOR EACH ROW
WHEN NOT (NEW.name IS OLD.name AND NEW.transport IS OLD.transport AND NEW.url IS OLD.url AND NEW.command IS OLD.command AND NEW.headers IS OLD.headers AND NEW.auth_config IS OLD.auth_config AND NEW.status IS OLD.status AND NEW.credentials_url IS OLD.credentials_url)
BEGIN
  UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'mcp_server';
END;
-- +goose StatementEnd
ALTER TABLE sys_ai_mcp_server DROP COLUMN credentials_token_url;
