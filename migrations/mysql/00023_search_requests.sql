-- Requests a configured model wrote for a tool (issue 49 point 4,
-- BLINDEXEC_SEARCH_EXPANSION=model): one row per model and hash of the
-- text the model was shown, so a tool is asked about once per content,
-- whichever replica gets there first, and an unchanged tool never again.
-- requests is a JSON array of strings, searched as a weak field.

-- +goose Up
CREATE TABLE sys_ai_search_request (
  model        VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  content_hash CHAR(64)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  requests     TEXT         NOT NULL,
  create_time  DATETIME     NULL,
  PRIMARY KEY (model, content_hash)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci COMMENT='model-written requests for tool search';

-- +goose Down
DROP TABLE IF EXISTS sys_ai_search_request;
