-- An upstream MCP server's questions put to the person on the approval
-- page (issue 48 point 4): a pending item of kind "question" holds the
-- person's answer until the call waiting for it (on whichever replica
-- holds it) takes it, and, for a client of 2026-07-28 whose retry may
-- reach another replica, what the call did next (sealed).

-- +goose Up
ALTER TABLE sys_ai_run_pending
  ADD COLUMN answer TEXT NULL COMMENT 'a question: the person''s answer (JSON); its content is cleared once the call took it',
  ADD COLUMN outcome MEDIUMTEXT NULL COMMENT 'a question of a 2026-07-28 client: what the call did next, sealed';

-- +goose Down
ALTER TABLE sys_ai_run_pending DROP COLUMN outcome, DROP COLUMN answer;
