-- The SQLite twin of mysql/00025_execution_questions.sql.

-- +goose Up
ALTER TABLE sys_ai_execution ADD COLUMN questions TEXT NULL;

-- +goose Down
ALTER TABLE sys_ai_execution DROP COLUMN questions;
