-- The SQLite twin of mysql/00008_admin_log.sql.

-- +goose Up
CREATE TABLE sys_ai_admin_log (
  log_id      INTEGER      PRIMARY KEY AUTOINCREMENT,
  actor       VARCHAR(64)  NOT NULL,
  via         VARCHAR(16)  NOT NULL,
  action      VARCHAR(16)  NOT NULL,
  kind        VARCHAR(32)  NOT NULL,
  target      VARCHAR(512) NOT NULL,
  http_status INTEGER      NOT NULL,
  create_time DATETIME     NOT NULL
);
CREATE INDEX idx_admin_log_time ON sys_ai_admin_log (create_time);

-- +goose Down
DROP TABLE IF EXISTS sys_ai_admin_log;
