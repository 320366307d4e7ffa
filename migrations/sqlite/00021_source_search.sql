-- The SQLite twin of mysql/00021_source_search.sql.

-- +goose Up
ALTER TABLE sys_ai_import_source ADD COLUMN title VARCHAR(500) NULL;
ALTER TABLE sys_ai_import_source ADD COLUMN tag_descriptions TEXT NULL;
ALTER TABLE sys_ai_import_source ADD COLUMN aliases VARCHAR(2000) NULL;

-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_import_source_update AFTER UPDATE ON sys_ai_import_source FOR EACH ROW
WHEN NOT (NEW.title IS OLD.title AND NEW.tag_descriptions IS OLD.tag_descriptions AND NEW.aliases IS OLD.aliases)
BEGIN
  UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'plugin';
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER IF EXISTS trg_sys_ai_import_source_update;
ALTER TABLE sys_ai_import_source DROP COLUMN aliases;
ALTER TABLE sys_ai_import_source DROP COLUMN tag_descriptions;
ALTER TABLE sys_ai_import_source DROP COLUMN title;
