-- The OpenTelemetry trace of each execution and run (issue 36), so that an
-- operator goes from a trace to its records and back.

-- +goose Up
ALTER TABLE sys_ai_execution
  ADD COLUMN trace_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'W3C trace id, 32 hex digits; NULL when not traced',
  ADD KEY idx_sys_ai_execution_trace (trace_id);
ALTER TABLE sys_ai_run
  ADD COLUMN trace_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'W3C trace id, 32 hex digits; NULL when not traced';

-- +goose Down
ALTER TABLE sys_ai_run DROP COLUMN trace_id;
ALTER TABLE sys_ai_execution DROP KEY idx_sys_ai_execution_trace, DROP COLUMN trace_id;
