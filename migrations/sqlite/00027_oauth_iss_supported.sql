-- The SQLite twin of mysql/00027_oauth_iss_supported.sql.

-- +goose Up
ALTER TABLE sys_ai_oauth_provider ADD COLUMN iss_supported CHAR(1) NOT NULL DEFAULT '0';

-- +goose Down
ALTER TABLE sys_ai_oauth_provider DROP COLUMN iss_supported;
