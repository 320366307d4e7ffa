-- The SQLite twin of mysql/00011_quotas.sql.

-- +goose Up
CREATE TABLE sys_ai_quota_rule (
  rule_id            INTEGER      PRIMARY KEY AUTOINCREMENT,
  rule_name          VARCHAR(64)  NOT NULL UNIQUE,
  user_id            BIGINT       NULL,
  plugins            JSON         NULL,
  tags               JSON         NULL,
  consequential      CHAR(1)      NOT NULL DEFAULT '0',
  calls              BIGINT       NULL,
  window_unit        VARCHAR(8)   NULL,
  run_tokens_per_day BIGINT       NULL,
  create_by          VARCHAR(64)  DEFAULT '',
  create_time        DATETIME     NULL,
  update_by          VARCHAR(64)  DEFAULT '',
  update_time        DATETIME     NULL,
  remark             VARCHAR(500) NULL
);

CREATE TABLE sys_ai_quota_use (
  rule_id      BIGINT   NOT NULL,
  user_id      BIGINT   NOT NULL,
  window_start BIGINT   NOT NULL,
  used         BIGINT   NOT NULL DEFAULT 0,
  update_time  DATETIME NULL,
  PRIMARY KEY (rule_id, user_id, window_start)
);

INSERT INTO sys_ai_change (scope, version) VALUES ('quota_rule', 0);

-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_quota_rule_insert AFTER INSERT ON sys_ai_quota_rule FOR EACH ROW
BEGIN
  UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'quota_rule';
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_quota_rule_update AFTER UPDATE ON sys_ai_quota_rule FOR EACH ROW
BEGIN
  UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'quota_rule';
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_quota_rule_delete AFTER DELETE ON sys_ai_quota_rule FOR EACH ROW
BEGIN
  UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'quota_rule';
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER IF EXISTS trg_sys_ai_quota_rule_insert;
DROP TRIGGER IF EXISTS trg_sys_ai_quota_rule_update;
DROP TRIGGER IF EXISTS trg_sys_ai_quota_rule_delete;
DELETE FROM sys_ai_change WHERE scope = 'quota_rule';
DROP TABLE IF EXISTS sys_ai_quota_use;
DROP TABLE IF EXISTS sys_ai_quota_rule;
