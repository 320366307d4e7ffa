-- The SQLite twin of mysql/00033_replica.sql.

-- +goose Up
CREATE TABLE sys_ai_replica (
  replica_id  VARCHAR(16)   NOT NULL PRIMARY KEY,
  host        VARCHAR(255)  NOT NULL DEFAULT '',
  version     VARCHAR(255)  NOT NULL DEFAULT '',
  settings    TEXT          NOT NULL,
  start_time  DATETIME      NOT NULL,
  seen_time   DATETIME      NOT NULL
);

-- +goose Down
DROP TABLE IF EXISTS sys_ai_replica;
