-- The SQLite twin of mysql/00035_import_source_path_options.sql.

-- +goose Up
UPDATE sys_ai_import_source SET options = NULL
  WHERE options LIKE '%"SourceURL":"http%;%';

-- +goose Down
-- Nothing: the next sync writes the options again.
