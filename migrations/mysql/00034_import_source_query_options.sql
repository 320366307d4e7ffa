-- An OpenAPI import from a URL with a credential in its query
-- (https://host/spec.json?access_token=…) kept the URL whole as the
-- source's location and in its options' SourceURL, both shown by
-- GET /v1/sources (leftovers78). The location is now written with the
-- credential's value as "…" and the URL itself sealed (sealed_url, 00031),
-- so that a sync from the location as shown still fetches the document.
-- A row written before keeps its location until its next sync from the
-- URL whole rewrites it (the engine shows it redacted meanwhile); the
-- options of every row whose SourceURL has a query are cleared here (SQL
-- cannot tell a credential's name), which only makes that sync convert
-- the document again.

-- +goose Up
UPDATE sys_ai_import_source SET options = NULL
  WHERE options LIKE '%"SourceURL":"http%?%';

-- +goose Down
-- Nothing: the next sync writes the options again.
