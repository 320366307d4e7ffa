-- The vault's key check: one row per master key that has encrypted in this
-- database, holding a known value sealed under it.

-- +goose Up
CREATE TABLE sys_ai_vault_key (
  key_id      VARCHAR(8)    NOT NULL PRIMARY KEY,
  check_value VARCHAR(255)  NOT NULL,
  create_time DATETIME      NOT NULL
);

-- +goose Down
DROP TABLE IF EXISTS sys_ai_vault_key;
