-- An OpenAPI import from a URL with userinfo (https://user:token@host/spec.json)
-- kept the URL whole as the source's location and in its options'
-- SourceURL, both shown by GET /v1/sources (leftovers76). The location is
-- now written without its userinfo (https://…@host/spec.json) and the URL
-- itself sealed under the master key here (as a credential is), so that a
-- sync from the location as shown still fetches the protected document.
-- A row written before keeps its location until its next sync rewrites
-- it (the engine shows it redacted meanwhile); its options are cleared
-- here, which only makes that sync convert the document again.

-- +goose Up
ALTER TABLE sys_ai_import_source
  ADD COLUMN sealed_url TEXT NULL COMMENT 'the URL with its userinfo, encrypted under the master key (v1:<kid>:<payload>); NULL: none';
UPDATE sys_ai_import_source SET options = NULL
  WHERE options LIKE '%"SourceURL":"http://%@%' OR options LIKE '%"SourceURL":"https://%@%';

-- +goose Down
ALTER TABLE sys_ai_import_source DROP COLUMN sealed_url;
