-- Who may use which tool (issue 46).
--
-- sys_ai_plugin.perms is an administrator's column, as consequential is:
-- the RuoYi permission strings (system:user:list) of which a user must
-- hold one to use the plugin, comma-separated as in sys_menu.perms; NULL
-- when the plugin has none (BLINDEXEC_TOOL_ACCESS decides). A re-import
-- or sync never touches it.
--
-- sys_ai_agent is a named selection of tools (by plugin names, tags and
-- import sources, so that a sync adding an operation under a selected tag
-- adds it to the agent), with the permissions needed to use the agent.
-- Replicas follow it through the 'agent' change counter.

-- +goose Up
ALTER TABLE sys_ai_plugin
  ADD COLUMN perms VARCHAR(2100) NULL COMMENT 'comma-separated RuoYi permission strings, one of which a user needs; NULL none (issue 46)';

CREATE TABLE sys_ai_agent (
  agent_id    BIGINT        NOT NULL AUTO_INCREMENT,
  name        VARCHAR(64)   CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  description TEXT          NULL,
  tools       JSON          NULL COMMENT '{"names": [...], "tags": [...], "sources": [source_id...]}',
  perms       VARCHAR(2100) NULL COMMENT 'comma-separated RuoYi permission strings, one of which a user needs; NULL none',
  status      CHAR(1)       NOT NULL DEFAULT '0' COMMENT '0 enabled, 1 disabled',
  create_by   VARCHAR(64)   DEFAULT '',
  create_time DATETIME      NULL,
  update_by   VARCHAR(64)   DEFAULT '',
  update_time DATETIME      NULL,
  remark      VARCHAR(500)  NULL,
  PRIMARY KEY (agent_id),
  UNIQUE KEY uk_sys_ai_agent_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci COMMENT='agents: named selections of tools (issue 46)';

INSERT INTO sys_ai_change (scope, version) VALUES ('agent', 0);

CREATE TRIGGER trg_sys_ai_agent_insert AFTER INSERT ON sys_ai_agent FOR EACH ROW UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'agent';

CREATE TRIGGER trg_sys_ai_agent_update AFTER UPDATE ON sys_ai_agent FOR EACH ROW UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'agent';

CREATE TRIGGER trg_sys_ai_agent_delete AFTER DELETE ON sys_ai_agent FOR EACH ROW UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'agent';

-- +goose Down
DROP TRIGGER IF EXISTS trg_sys_ai_agent_insert;
DROP TRIGGER IF EXISTS trg_sys_ai_agent_update;
DROP TRIGGER IF EXISTS trg_sys_ai_agent_delete;
DELETE FROM sys_ai_change WHERE scope = 'agent';
DROP TABLE IF EXISTS sys_ai_agent;
ALTER TABLE sys_ai_plugin DROP COLUMN perms;
