-- An import source's identity is its location or an explicit name; the
-- options it was imported with are kept beside it, so that the same bytes
-- with other options are a change, not a no-op (issue 17).

-- +goose Up
ALTER TABLE sys_ai_import_source
  ADD COLUMN options TEXT NULL COMMENT 'JSON of the conversion options of the last sync';

-- +goose Down
ALTER TABLE sys_ai_import_source DROP COLUMN options;
