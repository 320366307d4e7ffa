-- An OpenAPI import from a URL with a credential in a path segment's
-- parameters (https://host/spec.json;jsessionid=…, which servlet
-- containers read) kept it whole as the source's location and in its
-- options' SourceURL, both shown by GET /v1/sources (leftovers80). As for
-- a query's credential (00034), the location is now written with the
-- value as "…" and the URL sealed; a row written before keeps its location
-- until its next sync from the URL whole (the engine shows it redacted
-- meanwhile), and the options of every row whose SourceURL may have a
-- path parameter are cleared here, which only makes that sync convert the
-- document again.

-- +goose Up
UPDATE sys_ai_import_source SET options = NULL
  WHERE options LIKE '%"SourceURL":"http%;%';

-- +goose Down
-- Nothing: the next sync writes the options again.
