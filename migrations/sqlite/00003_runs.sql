-- Runs of the LLM loop: the reply body, so GET /v1/runs/{run_id} answers it later.

-- +goose Up
CREATE TABLE sys_ai_run (
  run_id      VARCHAR(36)   NOT NULL PRIMARY KEY,
  user_id     BIGINT        NULL,
  status      VARCHAR(16)   NOT NULL,
  model       VARCHAR(128)  NULL,
  reply       TEXT          NULL,
  error_code  VARCHAR(64)   NULL,
  create_time DATETIME      NOT NULL,
  update_time DATETIME      NOT NULL
);
CREATE INDEX idx_sys_ai_run_user_time ON sys_ai_run (user_id, create_time);

-- +goose Down
DROP TABLE IF EXISTS sys_ai_run;
