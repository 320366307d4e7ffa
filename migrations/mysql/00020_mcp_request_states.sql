-- The requestStates of MCP's multi round-trip requests (issue 47 point 2)
-- claimed by their nonce: a sealed state is good for one retry on any
-- replica, and this table is what makes it single-use. Rows are removed
-- once expired (the state is refused by its expiry before then anyway).

-- +goose Up
CREATE TABLE sys_ai_mcp_request_state (
  nonce       CHAR(32)    NOT NULL COMMENT 'the state''s nonce, hex',
  expire_time DATETIME(3) NOT NULL COMMENT 'the state''s expiry: the row may go after it',
  create_time DATETIME(3) NOT NULL COMMENT 'when the retry claimed it',
  PRIMARY KEY (nonce),
  KEY idx_sys_ai_mcp_request_state_expire (expire_time)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci COMMENT='claimed MCP requestStates (issue 47)';

-- +goose Down
DROP TABLE IF EXISTS sys_ai_mcp_request_state;
