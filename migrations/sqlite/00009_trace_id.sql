-- The SQLite twin of mysql/00009_trace_id.sql.

-- +goose Up
ALTER TABLE sys_ai_execution ADD COLUMN trace_id CHAR(32) NULL;
CREATE INDEX idx_sys_ai_execution_trace ON sys_ai_execution (trace_id);
ALTER TABLE sys_ai_run ADD COLUMN trace_id CHAR(32) NULL;

-- +goose Down
DROP INDEX idx_sys_ai_execution_trace;
ALTER TABLE sys_ai_run DROP COLUMN trace_id;
ALTER TABLE sys_ai_execution DROP COLUMN trace_id;
