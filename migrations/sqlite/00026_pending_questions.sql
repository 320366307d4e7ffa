-- The SQLite twin of mysql/00026_pending_questions.sql.

-- +goose Up
ALTER TABLE sys_ai_run_pending ADD COLUMN answer TEXT NULL;
ALTER TABLE sys_ai_run_pending ADD COLUMN outcome TEXT NULL;

-- +goose Down
ALTER TABLE sys_ai_run_pending DROP COLUMN outcome;
ALTER TABLE sys_ai_run_pending DROP COLUMN answer;
