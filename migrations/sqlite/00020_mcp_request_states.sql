-- The SQLite twin of mysql/00020_mcp_request_states.sql.

-- +goose Up
CREATE TABLE sys_ai_mcp_request_state (
  nonce       CHAR(32) NOT NULL PRIMARY KEY,
  expire_time DATETIME NOT NULL,
  create_time DATETIME NOT NULL
);
CREATE INDEX idx_sys_ai_mcp_request_state_expire ON sys_ai_mcp_request_state (expire_time);

-- +goose Down
DROP TABLE IF EXISTS sys_ai_mcp_request_state;
