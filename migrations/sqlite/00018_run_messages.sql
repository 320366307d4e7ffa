-- The SQLite twin of mysql/00018_run_messages.sql.

-- +goose Up
ALTER TABLE sys_ai_run ADD COLUMN messages TEXT NULL;
ALTER TABLE sys_ai_run ADD COLUMN first_message VARCHAR(200) NULL;
ALTER TABLE sys_ai_run ADD COLUMN asked VARCHAR(2000) NULL;
CREATE INDEX idx_sys_ai_run_time ON sys_ai_run (create_time);

-- +goose Down
DROP INDEX idx_sys_ai_run_time;
ALTER TABLE sys_ai_run DROP COLUMN asked;
ALTER TABLE sys_ai_run DROP COLUMN first_message;
ALTER TABLE sys_ai_run DROP COLUMN messages;
