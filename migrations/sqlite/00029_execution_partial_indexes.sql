-- SQLite only: the indexes on a record's run and trace hold only the rows
-- that have one (most records have neither), so that writing a record
-- inserts into neither tree. A query by run_id = ? or trace_id = ? implies
-- IS NOT NULL, so SQLite still uses them. MariaDB has no partial indexes;
-- its indexes stay as they are.

-- +goose Up
DROP INDEX idx_sys_ai_execution_run;
CREATE INDEX idx_sys_ai_execution_run ON sys_ai_execution (run_id) WHERE run_id IS NOT NULL;
DROP INDEX idx_sys_ai_execution_trace;
CREATE INDEX idx_sys_ai_execution_trace ON sys_ai_execution (trace_id) WHERE trace_id IS NOT NULL;

-- +goose Down
DROP INDEX idx_sys_ai_execution_trace;
CREATE INDEX idx_sys_ai_execution_trace ON sys_ai_execution (trace_id);
DROP INDEX idx_sys_ai_execution_run;
CREATE INDEX idx_sys_ai_execution_run ON sys_ai_execution (run_id);
