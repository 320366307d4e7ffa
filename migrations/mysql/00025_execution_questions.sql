-- The questions an upstream MCP server put to the person during a call,
-- and their answers (issue 48 point 4): JSON, masked like the rest of the
-- record.

-- +goose Up
ALTER TABLE sys_ai_execution
  ADD COLUMN questions TEXT NULL COMMENT 'JSON, masked: an upstream MCP server''s questions during the call and their answers (issue 48)';

-- +goose Down
ALTER TABLE sys_ai_execution DROP COLUMN questions;
