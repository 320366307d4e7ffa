-- The SQLite twin of mysql/00004_changes.sql. The change counter: one row per source the replicas cache, bumped by
-- triggers on every insert, update and delete, so that rows written with plain
-- SQL (RuoYi manages sys_ai_plugin and writes sys_user_credential) move it
-- like the engine's own writes. Replicas poll it (BLINDEXEC_CHANGE_POLL_MS) and
-- reload what they keep in memory when it moves.
-- Updates of bookkeeping columns only (a token's last_used_time, an MCP
-- server's tools_cache) do not count: they change nothing a replica caches.

-- +goose Up
CREATE TABLE sys_ai_change (
  scope   VARCHAR(16) NOT NULL PRIMARY KEY,
  version BIGINT      NOT NULL DEFAULT 0
);

INSERT INTO sys_ai_change (scope, version) VALUES ('plugin', 0), ('credential', 0), ('token', 0), ('mcp_server', 0);

-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_plugin_insert AFTER INSERT ON sys_ai_plugin FOR EACH ROW
BEGIN
  UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'plugin';
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_plugin_update AFTER UPDATE ON sys_ai_plugin FOR EACH ROW
BEGIN
  UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'plugin';
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_plugin_delete AFTER DELETE ON sys_ai_plugin FOR EACH ROW
BEGIN
  UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'plugin';
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER trg_sys_user_credential_insert AFTER INSERT ON sys_user_credential FOR EACH ROW
BEGIN
  UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'credential';
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER trg_sys_user_credential_update AFTER UPDATE ON sys_user_credential FOR EACH ROW
BEGIN
  UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'credential';
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER trg_sys_user_credential_delete AFTER DELETE ON sys_user_credential FOR EACH ROW
BEGIN
  UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'credential';
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_token_insert AFTER INSERT ON sys_ai_token FOR EACH ROW
BEGIN
  UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'token';
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_token_update AFTER UPDATE ON sys_ai_token FOR EACH ROW
WHEN NOT (NEW.user_id IS OLD.user_id AND NEW.token_name IS OLD.token_name AND NEW.token_hash IS OLD.token_hash AND NEW.token_prefix IS OLD.token_prefix AND NEW.expire_time IS OLD.expire_time)
BEGIN
  UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'token';
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_token_delete AFTER DELETE ON sys_ai_token FOR EACH ROW
BEGIN
  UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'token';
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_mcp_server_insert AFTER INSERT ON sys_ai_mcp_server FOR EACH ROW
BEGIN
  UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'mcp_server';
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_mcp_server_update AFTER UPDATE ON sys_ai_mcp_server FOR EACH ROW
WHEN NOT (NEW.name IS OLD.name AND NEW.transport IS OLD.transport AND NEW.url IS OLD.url AND NEW.command IS OLD.command AND NEW.headers IS OLD.headers AND NEW.auth_config IS OLD.auth_config AND NEW.status IS OLD.status)
BEGIN
  UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'mcp_server';
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_mcp_server_delete AFTER DELETE ON sys_ai_mcp_server FOR EACH ROW
BEGIN
  UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'mcp_server';
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER IF EXISTS trg_sys_ai_plugin_insert;
DROP TRIGGER IF EXISTS trg_sys_ai_plugin_update;
DROP TRIGGER IF EXISTS trg_sys_ai_plugin_delete;
DROP TRIGGER IF EXISTS trg_sys_user_credential_insert;
DROP TRIGGER IF EXISTS trg_sys_user_credential_update;
DROP TRIGGER IF EXISTS trg_sys_user_credential_delete;
DROP TRIGGER IF EXISTS trg_sys_ai_token_insert;
DROP TRIGGER IF EXISTS trg_sys_ai_token_update;
DROP TRIGGER IF EXISTS trg_sys_ai_token_delete;
DROP TRIGGER IF EXISTS trg_sys_ai_mcp_server_insert;
DROP TRIGGER IF EXISTS trg_sys_ai_mcp_server_update;
DROP TRIGGER IF EXISTS trg_sys_ai_mcp_server_delete;
DROP TABLE IF EXISTS sys_ai_change;
