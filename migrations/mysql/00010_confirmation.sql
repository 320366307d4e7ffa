-- Confirmation of consequential calls (issue 33).
--
-- sys_ai_plugin.consequential is an administrator's classification of each
-- plugin, in a column of its own so that a re-import or sync, which
-- rewrites execution_config, never touches it: '1' consequential, '0' not,
-- NULL derived (execution_config's consequential_hint from the import,
-- else the method: GET, HEAD, OPTIONS are not, every other method and
-- every MCP tool is).
--
-- A run that reaches a consequential call pauses: sys_ai_run keeps what
-- resuming it needs (state: messages, inline plugins, fixed params,
-- options — never credentials) and when it expires; sys_ai_run_pending
-- holds each call waiting for a person, bound to the user, the run and
-- the digest of the exact request. Replicas read both from the database
-- on every use and cache nothing of them, so they need no sys_ai_change
-- scope.

-- +goose Up
ALTER TABLE sys_ai_plugin
  ADD COLUMN consequential CHAR(1) NULL COMMENT '1 consequential, 0 not, NULL derived (issue 33)';

ALTER TABLE sys_ai_execution
  ADD COLUMN confirmation VARCHAR(160) NULL COMMENT 'a confirmed call: the decision it was sent on (who, the pending item)';

ALTER TABLE sys_ai_token
  ADD COLUMN scope VARCHAR(16) NULL COMMENT 'console: signs in to the console only (sessions that may approve under BLINDEXEC_CONFIRM_VIA=console)';

ALTER TABLE sys_ai_run
  ADD COLUMN state JSON NULL COMMENT 'a paused run: what resuming needs; never a credential',
  ADD COLUMN expire_time DATETIME(3) NULL COMMENT 'a paused run: when it closes as expired';

CREATE TABLE sys_ai_run_pending (
  pending_id   VARCHAR(32)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT '128 random bits, hex',
  run_id       VARCHAR(36)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'empty for a direct call (POST /v1/execute)',
  principal    VARCHAR(64)  NULL COMMENT 'a direct call: the token kind and user that prepared it, the only one that may send it',
  user_id      BIGINT       NULL,
  kind         VARCHAR(16)  NOT NULL COMMENT 'confirmation',
  tool         VARCHAR(64)  NOT NULL,
  tool_call_id VARCHAR(128) NOT NULL,
  digest       CHAR(64)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'sha256 of the fully resolved request',
  item         JSON         NOT NULL COMMENT 'the pending item as shown: arguments, the prepared request (masked)',
  status       VARCHAR(16)  NOT NULL COMMENT 'pending, approved, denied, expired or stale',
  reason       VARCHAR(500) NULL,
  decided_by   VARCHAR(64)  NULL,
  decided_time DATETIME(3)  NULL,
  expire_time  DATETIME(3)  NOT NULL,
  create_time  DATETIME(3)  NOT NULL,
  PRIMARY KEY (pending_id),
  KEY idx_sys_ai_run_pending_run (run_id),
  KEY idx_sys_ai_run_pending_user (user_id, status)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci COMMENT='calls waiting for a person (issue 33)';

-- +goose Down
DROP TABLE IF EXISTS sys_ai_run_pending;
ALTER TABLE sys_ai_run DROP COLUMN state, DROP COLUMN expire_time;
ALTER TABLE sys_ai_token DROP COLUMN scope;
ALTER TABLE sys_ai_execution DROP COLUMN confirmation;
ALTER TABLE sys_ai_plugin DROP COLUMN consequential;
