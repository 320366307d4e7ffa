-- Pending items are bounded (issue 44 point 5).
--
-- sys_ai_pending_user holds one row per user that ever had a call wait for
-- a person: writing it first serializes, per user, the transactions that
-- add pending items, so that the count they check against
-- BLINDEXEC_PENDING_MAX_PER_USER is exact on every replica (0 stands for
-- calls naming no user). The indexes serve the inboxes, read newest first
-- one page at a time (GET /v1/pending, GET /v1/runs?status=paused), and the
-- removal of decided and expired items after BLINDEXEC_PENDING_RETENTION_MS.

-- +goose Up
CREATE TABLE sys_ai_pending_user (
  user_id     BIGINT      NOT NULL COMMENT '0: calls naming no user',
  update_time DATETIME(3) NOT NULL,
  PRIMARY KEY (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci COMMENT='per-user lock of pending item writes (issue 44)';

CREATE INDEX idx_sys_ai_run_pending_inbox ON sys_ai_run_pending (run_id, status, create_time);
CREATE INDEX idx_sys_ai_run_pending_closed ON sys_ai_run_pending (status, decided_time);
CREATE INDEX idx_sys_ai_run_status_time ON sys_ai_run (status, create_time);

-- +goose Down
DROP INDEX idx_sys_ai_run_status_time ON sys_ai_run;
DROP INDEX idx_sys_ai_run_pending_closed ON sys_ai_run_pending;
DROP INDEX idx_sys_ai_run_pending_inbox ON sys_ai_run_pending;
DROP TABLE IF EXISTS sys_ai_pending_user;
