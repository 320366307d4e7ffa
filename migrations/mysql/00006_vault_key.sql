-- The vault's key check: one row per master key that has encrypted in this
-- database, holding a known value sealed under it. A key that cannot open
-- its row, or a database whose rows all name other keys, is refused at
-- start instead of failing on the first credential read.

-- +goose Up
CREATE TABLE sys_ai_vault_key (
  key_id      CHAR(8)       CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'the kid: 8 hex digits of the SHA-256 of the key',
  check_value VARCHAR(255)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'v1:<kid>:<payload> of a fixed text, as credentials are stored',
  create_time DATETIME(3)   NOT NULL,
  PRIMARY KEY (key_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci COMMENT='vault key checks';

-- +goose Down
DROP TABLE IF EXISTS sys_ai_vault_key;
