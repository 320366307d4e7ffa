-- The SQLite twin of mysql/00016_token_perms.sql.

-- +goose Up
ALTER TABLE sys_ai_token ADD COLUMN perms VARCHAR(2100) NULL;

-- +goose Down
ALTER TABLE sys_ai_token DROP COLUMN perms;
