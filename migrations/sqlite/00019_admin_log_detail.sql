-- The SQLite twin of mysql/00019_admin_log_detail.sql.

-- +goose Up
ALTER TABLE sys_ai_admin_log ADD COLUMN detail TEXT NULL;

-- +goose Down
ALTER TABLE sys_ai_admin_log DROP COLUMN detail;
