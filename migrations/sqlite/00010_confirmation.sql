-- The SQLite twin of mysql/00010_confirmation.sql.

-- +goose Up
ALTER TABLE sys_ai_plugin ADD COLUMN consequential CHAR(1) NULL;

-- +goose Down
ALTER TABLE sys_ai_plugin DROP COLUMN consequential;
