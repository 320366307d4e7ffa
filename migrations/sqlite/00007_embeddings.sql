-- The SQLite twin of mysql/00007_embeddings.sql.

-- +goose Up
CREATE TABLE sys_ai_plugin_embedding (
  model        VARCHAR(128) NOT NULL,
  content_hash CHAR(64)     NOT NULL,
  dims         INTEGER      NOT NULL,
  vector       BLOB         NOT NULL,
  create_time  DATETIME     NULL,
  PRIMARY KEY (model, content_hash)
);

-- +goose Down
DROP TABLE IF EXISTS sys_ai_plugin_embedding;
