-- The SQLite twin of mysql/00015_access.sql.

-- +goose Up
ALTER TABLE sys_ai_plugin ADD COLUMN perms VARCHAR(2100) NULL;

CREATE TABLE sys_ai_agent (
  agent_id    INTEGER       PRIMARY KEY AUTOINCREMENT,
  name        VARCHAR(64)   NOT NULL,
  description TEXT          NULL,
  tools       TEXT          NULL,
  perms       VARCHAR(2100) NULL,
  status      CHAR(1)       NOT NULL DEFAULT '0',
  create_by   VARCHAR(64)   DEFAULT '',
  create_time DATETIME      NULL,
  update_by   VARCHAR(64)   DEFAULT '',
  update_time DATETIME      NULL,
  remark      VARCHAR(500)  NULL
);
CREATE UNIQUE INDEX uk_sys_ai_agent_name ON sys_ai_agent (name);

INSERT INTO sys_ai_change (scope, version) VALUES ('agent', 0);

-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_agent_insert AFTER INSERT ON sys_ai_agent FOR EACH ROW
BEGIN
  UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'agent';
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_agent_update AFTER UPDATE ON sys_ai_agent FOR EACH ROW
BEGIN
  UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'agent';
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_agent_delete AFTER DELETE ON sys_ai_agent FOR EACH ROW
BEGIN
  UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'agent';
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER IF EXISTS trg_sys_ai_agent_insert;
DROP TRIGGER IF EXISTS trg_sys_ai_agent_update;
DROP TRIGGER IF EXISTS trg_sys_ai_agent_delete;
DELETE FROM sys_ai_change WHERE scope = 'agent';
DROP INDEX IF EXISTS uk_sys_ai_agent_name;
DROP TABLE IF EXISTS sys_ai_agent;
ALTER TABLE sys_ai_plugin DROP COLUMN perms;
