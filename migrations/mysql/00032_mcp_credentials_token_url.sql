-- The OAuth token URL an MCP server's stored credentials were given for
-- (review76): 00030 kept the origin of the server's url, but a server
-- whose auth config is oauth2 client_credentials sends the users' client
-- id and secret to auth_config.oauth2.token_url, which plain SQL may move
-- as well. A call sends stored credentials only while that URL's origin
-- is this one's. The engine's registration writes it with the auth
-- config; a server registered before is taken as it is. NULL with a
-- token_url (a row written by SQL without it): no stored credential is
-- sent. Writing it is accepting the host; the update trigger counts it.

-- +goose Up
ALTER TABLE sys_ai_mcp_server
  ADD COLUMN credentials_token_url VARCHAR(2048) NULL COMMENT 'the OAuth token URL (its origin counts) the stored credentials of this server were given for; NULL: none are sent to a token URL';
UPDATE sys_ai_mcp_server SET credentials_token_url = JSON_UNQUOTE(JSON_EXTRACT(auth_config, '$.oauth2.token_url'))
  WHERE JSON_VALID(auth_config) AND JSON_TYPE(JSON_EXTRACT(auth_config, '$.oauth2.token_url')) = 'STRING';
DROP TRIGGER IF EXISTS trg_sys_ai_mcp_server_update;
-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_mcp_server_update AFTER UPDATE ON sys_ai_mcp_server FOR EACH ROW
BEGIN
  IF NOT (NEW.name <=> OLD.name AND NEW.transport <=> OLD.transport AND NEW.url <=> OLD.url AND NEW.command <=> OLD.command AND NEW.headers <=> OLD.headers AND NEW.auth_config <=> OLD.auth_config AND NEW.status <=> OLD.status AND NEW.credentials_url <=> OLD.credentials_url AND NEW.credentials_token_url <=> OLD.credentials_token_url) THEN
    UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'mcp_server';
  END IF;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER IF EXISTS trg_sys_ai_mcp_server_update;
-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_mcp_server_update AFTER UPDATE ON sys_ai_mcp_server FOR EACH ROW
BEGIN
  IF NOT (NEW.name <=> OLD.name AND NEW.transport <=> OLD.transport AND NEW.url <=> OLD.url AND NEW.command <=> OLD.command AND NEW.headers <=> OLD.headers AND NEW.auth_config <=> OLD.auth_config AND NEW.status <=> OLD.status AND NEW.credentials_url <=> OLD.credentials_url) THEN
    UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'mcp_server';
  END IF;
END;
-- +goose StatementEnd
ALTER TABLE sys_ai_mcp_server DROP COLUMN credentials_token_url;
