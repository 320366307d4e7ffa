-- The administrators' log in words (issue 51 point 4): each change's
-- object and the values that are not secret, as JSON {"op": ..., "args":
-- {...}}, from which the log is read as sentences in the reader's
-- language. NULL for the rows written before (read as method and path).

-- +goose Up
ALTER TABLE sys_ai_admin_log
  ADD COLUMN detail TEXT NULL COMMENT 'JSON {op, args}: the change and its values that are not secret (issue 51)';

-- +goose Down
ALTER TABLE sys_ai_admin_log DROP COLUMN detail;
