-- Confirmation of consequential calls (issue 33): an administrator's
-- classification of each plugin, kept in a column of its own so that a
-- re-import or sync, which rewrites execution_config, never touches it.
-- '1' consequential, '0' not, NULL derived (execution_config's
-- consequential_hint from the import, else the method: GET, HEAD, OPTIONS
-- are not, every other method and every MCP tool is).

-- +goose Up
ALTER TABLE sys_ai_plugin
  ADD COLUMN consequential CHAR(1) NULL COMMENT '1 consequential, 0 not, NULL derived (issue 33)';

-- +goose Down
ALTER TABLE sys_ai_plugin DROP COLUMN consequential;
