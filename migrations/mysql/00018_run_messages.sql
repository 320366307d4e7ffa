-- A run's own request, for the people who read it (issue 51 points 1
-- and 2): the messages the payload sent (the conversation the run
-- answered; never a credential, which a payload carries apart), the
-- start of its first user message, which the runs' list shows, and its
-- last, which an approval quotes — both read without the messages. The
-- list of every run, newest first, reads by time.

-- +goose Up
ALTER TABLE sys_ai_run
  ADD COLUMN messages      JSON         NULL COMMENT 'the request''s messages, each cut to 16 KiB; never a credential',
  ADD COLUMN first_message VARCHAR(200) NULL COMMENT 'the start of the request''s first user message',
  ADD COLUMN asked         VARCHAR(2000) NULL COMMENT 'the request''s last user message, cut to 2000 characters';
CREATE INDEX idx_sys_ai_run_time ON sys_ai_run (create_time);

-- +goose Down
DROP INDEX idx_sys_ai_run_time ON sys_ai_run;
ALTER TABLE sys_ai_run DROP COLUMN asked, DROP COLUMN first_message, DROP COLUMN messages;
