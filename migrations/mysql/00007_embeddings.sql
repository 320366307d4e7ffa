-- Plugin vectors for the optional semantic ranking of tool search
-- (BLINDEXEC_EMBEDDINGS_*): one row per embedding model and hash of the text
-- embedded, so a plugin is embedded once per content, whichever replica gets
-- there first, and an unchanged plugin never again. vector is the float32
-- components, little-endian.

-- +goose Up
CREATE TABLE sys_ai_plugin_embedding (
  model        VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  content_hash CHAR(64)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  dims         INT          NOT NULL,
  vector       MEDIUMBLOB   NOT NULL,
  create_time  DATETIME     NULL,
  PRIMARY KEY (model, content_hash)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci COMMENT='plugin vectors for semantic tool search';

-- +goose Down
DROP TABLE IF EXISTS sys_ai_plugin_embedding;
