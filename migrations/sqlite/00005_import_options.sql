-- The SQLite twin of mysql/00005_import_options.sql.

-- +goose Up
ALTER TABLE sys_ai_import_source ADD COLUMN options TEXT NULL;

-- +goose Down
ALTER TABLE sys_ai_import_source DROP COLUMN options;
