-- The SQLite twin of mysql/00010_confirmation.sql.

-- +goose Up
ALTER TABLE sys_ai_plugin ADD COLUMN consequential CHAR(1) NULL;
ALTER TABLE sys_ai_execution ADD COLUMN confirmation VARCHAR(160) NULL;
ALTER TABLE sys_ai_token ADD COLUMN scope VARCHAR(16) NULL;
ALTER TABLE sys_ai_run ADD COLUMN state TEXT NULL;
ALTER TABLE sys_ai_run ADD COLUMN expire_time DATETIME NULL;

CREATE TABLE sys_ai_run_pending (
  pending_id   VARCHAR(32)  NOT NULL PRIMARY KEY,
  run_id       VARCHAR(36)  NOT NULL,
  principal    VARCHAR(64)  NULL,
  user_id      BIGINT       NULL,
  kind         VARCHAR(16)  NOT NULL,
  tool         VARCHAR(64)  NOT NULL,
  tool_call_id VARCHAR(128) NOT NULL,
  digest       CHAR(64)     NOT NULL,
  item         TEXT         NOT NULL,
  status       VARCHAR(16)  NOT NULL,
  reason       VARCHAR(500) NULL,
  decided_by   VARCHAR(64)  NULL,
  decided_time DATETIME     NULL,
  expire_time  DATETIME     NOT NULL,
  create_time  DATETIME     NOT NULL
);
CREATE INDEX idx_sys_ai_run_pending_run ON sys_ai_run_pending (run_id);
CREATE INDEX idx_sys_ai_run_pending_user ON sys_ai_run_pending (user_id, status);

-- +goose Down
DROP TABLE IF EXISTS sys_ai_run_pending;
ALTER TABLE sys_ai_run DROP COLUMN expire_time;
ALTER TABLE sys_ai_run DROP COLUMN state;
ALTER TABLE sys_ai_token DROP COLUMN scope;
ALTER TABLE sys_ai_execution DROP COLUMN confirmation;
ALTER TABLE sys_ai_plugin DROP COLUMN consequential;
