-- The URL an MCP server's stored credentials were given for (leftovers75):
-- a call sends users' stored credentials to the server only while its
-- url's origin is this one's, so a url moved outside the engine (plain
-- SQL) does not carry every user's key to the new host. The engine's
-- registration writes it with the url; a server registered before is
-- taken at its url as it is. NULL (a row inserted by SQL without it): no
-- stored credential is sent. Writing it is accepting the host; the
-- update trigger now counts it, so every replica sees it within a poll.

-- +goose Up
ALTER TABLE sys_ai_mcp_server
  ADD COLUMN credentials_url VARCHAR(2048) NULL COMMENT 'the URL (its origin counts) the stored credentials of this server were given for; NULL: none are sent';
UPDATE sys_ai_mcp_server SET credentials_url = url WHERE url IS NOT NULL AND url <> '';
DROP TRIGGER IF EXISTS trg_sys_ai_mcp_server_update;
-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_mcp_server_update AFTER UPDATE ON sys_ai_mcp_server FOR EACH ROW
BEGIN
  IF NOT (NEW.name <=> OLD.name AND NEW.transport <=> OLD.transport AND NEW.url <=> OLD.url AND NEW.command <=> OLD.command AND NEW.headers <=> OLD.headers AND NEW.auth_config <=> OLD.auth_config AND NEW.status <=> OLD.status AND NEW.credentials_url <=> OLD.credentials_url) THEN
    UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'mcp_server';
  END IF;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER IF EXISTS trg_sys_ai_mcp_server_update;
-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_mcp_server_update AFTER UPDATE ON sys_ai_mcp_server FOR EACH ROW
BEGIN
  IF NOT (NEW.name <=> OLD.name AND NEW.transport <=> OLD.transport AND NEW.url <=> OLD.url AND NEW.command <=> OLD.command AND NEW.headers <=> OLD.headers AND NEW.auth_config <=> OLD.auth_config AND NEW.status <=> OLD.status) THEN
    UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'mcp_server';
  END IF;
END;
-- +goose StatementEnd
ALTER TABLE sys_ai_mcp_server DROP COLUMN credentials_url;
