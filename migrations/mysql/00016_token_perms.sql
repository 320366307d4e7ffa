-- A per-user token's fixed permission strings (issue 46): RuoYi
-- permission strings, comma-separated as in sys_menu.perms, which narrow
-- what the token's user may use (each judged beside the database
-- source's, never widening it); NULL when the token has none.

-- +goose Up
ALTER TABLE sys_ai_token
  ADD COLUMN perms VARCHAR(2100) NULL COMMENT 'comma-separated RuoYi permission strings narrowing the user''s; NULL none (issue 46)';

-- +goose Down
ALTER TABLE sys_ai_token DROP COLUMN perms;
