-- What tool search reads of an import source (issue 49 point 1): the
-- title the import found (an OpenAPI document's info.title, an MCP
-- server's title), its tags' descriptions (JSON object, tag → text), and
-- the aliases an administrator gives it (JSON array of strings), which a
-- sync never writes. A change of the aliases or the title moves the
-- catalog's counter, so every replica's index follows, whoever wrote it.

-- +goose Up
ALTER TABLE sys_ai_import_source
  ADD COLUMN title VARCHAR(500) NULL,
  ADD COLUMN tag_descriptions MEDIUMTEXT NULL,
  ADD COLUMN aliases VARCHAR(2000) NULL;

-- +goose StatementBegin
CREATE TRIGGER trg_sys_ai_import_source_update AFTER UPDATE ON sys_ai_import_source FOR EACH ROW
BEGIN
  IF NOT (NEW.title <=> OLD.title AND NEW.tag_descriptions <=> OLD.tag_descriptions AND NEW.aliases <=> OLD.aliases) THEN
    UPDATE sys_ai_change SET version = version + 1 WHERE scope = 'plugin';
  END IF;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER IF EXISTS trg_sys_ai_import_source_update;
ALTER TABLE sys_ai_import_source DROP COLUMN title, DROP COLUMN tag_descriptions, DROP COLUMN aliases;
