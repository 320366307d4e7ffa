-- The SQLite twin of mysql/00031_import_source_sealed_url.sql.

-- +goose Up
ALTER TABLE sys_ai_import_source ADD COLUMN sealed_url TEXT NULL;
UPDATE sys_ai_import_source SET options = NULL
  WHERE options LIKE '%"SourceURL":"http://%@%' OR options LIKE '%"SourceURL":"https://%@%';

-- +goose Down
ALTER TABLE sys_ai_import_source DROP COLUMN sealed_url;
