-- Runs of the LLM loop: the reply body, so GET /v1/runs/{run_id} answers it later.

-- +goose Up
CREATE TABLE sys_ai_run (
  run_id      VARCHAR(36)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  user_id     BIGINT        NULL,
  status      VARCHAR(16)   NOT NULL COMMENT 'running, completed, max_steps, failed or cancelled',
  model       VARCHAR(128)  NULL,
  reply       JSON          NULL COMMENT 'the reply body; never a credential',
  error_code  VARCHAR(64)   NULL,
  create_time DATETIME(3)   NOT NULL,
  update_time DATETIME(3)   NOT NULL,
  PRIMARY KEY (run_id),
  KEY idx_sys_ai_run_user_time (user_id, create_time)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci COMMENT='LLM loop runs';

-- +goose Down
DROP TABLE IF EXISTS sys_ai_run;
