-- The SQLite twin of mysql/00028_run_token.sql.

-- +goose Up
ALTER TABLE sys_ai_run ADD COLUMN token_id INTEGER NULL;

-- +goose Down
ALTER TABLE sys_ai_run DROP COLUMN token_id;
