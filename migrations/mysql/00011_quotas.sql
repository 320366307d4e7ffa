-- Quotas (issue 37): the operator's rules, and the allowance each replica
-- has leased of a rule's window for a user. A replica leases allowance in
-- batches (package quota) and counts calls in memory; sys_ai_quota_use.used
-- is the allowance leased so far in the window, given back when a replica
-- leaves some unspent. Rules are followed by every replica through the
-- 'quota_rule' change counter.

-- +goose Up
CREATE TABLE sys_ai_quota_rule (
  rule_id            BIGINT       NOT NULL AUTO_INCREMENT,
  rule_name          VARCHAR(64)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  user_id            BIGINT       NULL COMMENT 'NULL: every user, each on their own',
  plugins            JSON         NULL,
  tags               JSON         NULL,
  consequential      CHAR(1)      NOT NULL DEFAULT '0',
  calls              BIGINT       NULL,
  window_unit        VARCHAR(8)   NULL COMMENT 'minute, hour or day',
  run_tokens_per_day BIGINT       NULL,
  create_by          VARCHAR(64)  DEFAULT '',
  create_time        DATETIME     NULL,
  update_by          VARCHAR(64)  DEFAULT '',
  update_time        DATETIME     NULL,
  remark             VARCHAR(500) NULL,
  PRIMARY KEY (rule_id),
  UNIQUE KEY uk_sys_ai_quota_rule_name (rule_name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci COMMENT='quota rules per user and tool';

CREATE TABLE sys_ai_quota_use (
  rule_id      BIGINT   NOT NULL,
  user_id      BIGINT   NOT NULL,
  window_start BIGINT   NOT NULL COMMENT 'unix seconds',
  used         BIGINT   NOT NULL DEFAULT 0 COMMENT 'allowance leased by replicas',
  update_time  DATETIME NULL,
  PRIMARY KEY (rule_id, user_id, window_start)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci COMMENT='quota allowance leased per window';

INSERT INTO sys_ai_change (scope, version) VALUES ('quota_rule', 0);

CREATE TRIGGER trg_sys_ai_quota_rule_insert AFTER INSERT ON sys_ai_quota_rule FOR EACH ROW UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'quota_rule';

CREATE TRIGGER trg_sys_ai_quota_rule_update AFTER UPDATE ON sys_ai_quota_rule FOR EACH ROW UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'quota_rule';

CREATE TRIGGER trg_sys_ai_quota_rule_delete AFTER DELETE ON sys_ai_quota_rule FOR EACH ROW UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'quota_rule';

-- +goose Down
DROP TRIGGER IF EXISTS trg_sys_ai_quota_rule_insert;
DROP TRIGGER IF EXISTS trg_sys_ai_quota_rule_update;
DROP TRIGGER IF EXISTS trg_sys_ai_quota_rule_delete;
DELETE FROM sys_ai_change WHERE scope = 'quota_rule';
DROP TABLE IF EXISTS sys_ai_quota_use;
DROP TABLE IF EXISTS sys_ai_quota_rule;
