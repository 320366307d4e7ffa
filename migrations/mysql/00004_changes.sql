-- The change counter: one row per source the replicas cache, bumped by
-- triggers on every insert, update and delete, so that rows written with plain
-- SQL (RuoYi manages sys_ai_plugin and writes sys_user_credential) move it
-- like the engine's own writes. Replicas poll it (BLINDEXEC_CHANGE_POLL_MS) and
-- reload what they keep in memory when it moves.
-- Updates of bookkeeping columns only (a token's last_used_time, an MCP
-- server's tools_cache) do not count: they change nothing a replica caches.
-- On a server with binary logging, creating triggers needs SUPER or
-- log_bin_trust_function_creators=1 (docs/deployment.md).

-- +goose Up
CREATE TABLE sys_ai_change (
  scope   VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  version BIGINT      NOT NULL DEFAULT 0,
  PRIMARY KEY (scope)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci COMMENT='change counters the replicas poll';

INSERT INTO sys_ai_change (scope, version) VALUES ('plugin', 0), ('credential', 0), ('token', 0), ('mcp_server', 0);

CREATE TRIGGER trg_sys_ai_plugin_insert AFTER INSERT ON sys_ai_plugin FOR EACH ROW UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'plugin';

CREATE TRIGGER trg_sys_ai_plugin_update AFTER UPDATE ON sys_ai_plugin FOR EACH ROW UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'plugin';

CREATE TRIGGER trg_sys_ai_plugin_delete AFTER DELETE ON sys_ai_plugin FOR EACH ROW UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'plugin';

CREATE TRIGGER trg_sys_user_credential_insert AFTER INSERT ON sys_user_credential FOR EACH ROW UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'credential';

CREATE TRIGGER trg_sys_user_credential_update AFTER UPDATE ON sys_user_credential FOR EACH ROW UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'credential';

CREATE TRIGGER trg_sys_user_credential_delete AFTER DELETE ON sys_user_credential FOR EACH ROW UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'credential';

CREATE TRIGGER trg_sys_ai_token_insert AFTER INSERT ON sys_ai_token FOR EACH ROW UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'token';

-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_token_update AFTER UPDATE ON sys_ai_token FOR EACH ROW
BEGIN
  IF NOT (NEW.user_id <=> OLD.user_id AND NEW.token_name <=> OLD.token_name AND NEW.token_hash <=> OLD.token_hash AND NEW.token_prefix <=> OLD.token_prefix AND NEW.expire_time <=> OLD.expire_time) THEN
    UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'token';
  END IF;
END;
-- +goose StatementEnd

CREATE TRIGGER trg_sys_ai_token_delete AFTER DELETE ON sys_ai_token FOR EACH ROW UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'token';

CREATE TRIGGER trg_sys_ai_mcp_server_insert AFTER INSERT ON sys_ai_mcp_server FOR EACH ROW UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'mcp_server';

-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_mcp_server_update AFTER UPDATE ON sys_ai_mcp_server FOR EACH ROW
BEGIN
  IF NOT (NEW.name <=> OLD.name AND NEW.transport <=> OLD.transport AND NEW.url <=> OLD.url AND NEW.command <=> OLD.command AND NEW.headers <=> OLD.headers AND NEW.auth_config <=> OLD.auth_config AND NEW.status <=> OLD.status) THEN
    UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'mcp_server';
  END IF;
END;
-- +goose StatementEnd

CREATE TRIGGER trg_sys_ai_mcp_server_delete AFTER DELETE ON sys_ai_mcp_server FOR EACH ROW UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'mcp_server';

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
