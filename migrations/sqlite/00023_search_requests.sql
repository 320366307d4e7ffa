-- The SQLite twin of mysql/00023_search_requests.sql.

-- +goose Up
CREATE TABLE sys_ai_search_request (
  model        VARCHAR(128) NOT NULL,
  content_hash CHAR(64)     NOT NULL,
  requests     TEXT         NOT NULL,
  create_time  DATETIME     NULL,
  PRIMARY KEY (model, content_hash)
);

-- +goose Down
DROP TABLE IF EXISTS sys_ai_search_request;
