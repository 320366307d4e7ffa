-- The per-user token that started a run (review 68): a token with fixed
-- perms lists, reads and resumes only the runs it started, so the run
-- keeps which token that was. NULL: started by the service, the
-- administrator, or before this column.

-- +goose Up
ALTER TABLE sys_ai_run
  ADD COLUMN token_id BIGINT NULL COMMENT 'sys_ai_token.token_id of the per-user token that started the run; NULL for the service, the administrator and runs started before 00028';

-- +goose Down
ALTER TABLE sys_ai_run DROP COLUMN token_id;
