-- The administrators' log (issue 20): who changed which plugin, credential,
-- token or MCP server, and when, as the console's Activity page shows it.
-- actor is the role of the token ("admin", "service", "user 7") and how it
-- came ("console" or "api"); target is the route's path (names and keys,
-- never values).

-- +goose Up
CREATE TABLE sys_ai_admin_log (
  log_id      BIGINT       NOT NULL AUTO_INCREMENT,
  actor       VARCHAR(64)  NOT NULL,
  via         VARCHAR(16)  NOT NULL,
  action      VARCHAR(16)  NOT NULL,
  kind        VARCHAR(32)  NOT NULL,
  target      VARCHAR(512) NOT NULL,
  http_status INT          NOT NULL,
  create_time DATETIME     NOT NULL,
  PRIMARY KEY (log_id),
  KEY idx_admin_log_time (create_time)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci COMMENT='administrative changes';

-- +goose Down
DROP TABLE IF EXISTS sys_ai_admin_log;
