-- The SQLite twin of mysql/00014_pending_bounds.sql.

-- +goose Up
CREATE TABLE sys_ai_pending_user (
  user_id     BIGINT   NOT NULL PRIMARY KEY,
  update_time DATETIME NOT NULL
);
CREATE INDEX idx_sys_ai_run_pending_inbox ON sys_ai_run_pending (run_id, status, create_time);
CREATE INDEX idx_sys_ai_run_pending_closed ON sys_ai_run_pending (status, decided_time);
CREATE INDEX idx_sys_ai_run_status_time ON sys_ai_run (status, create_time);

-- +goose Down
DROP INDEX idx_sys_ai_run_status_time;
DROP INDEX idx_sys_ai_run_pending_closed;
DROP INDEX idx_sys_ai_run_pending_inbox;
DROP TABLE IF EXISTS sys_ai_pending_user;
