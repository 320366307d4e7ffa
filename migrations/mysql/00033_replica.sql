-- Each serve replica's operator settings, as keyed digests (ops78): a
-- replica started with another admin, service or metrics token than its
-- peers on the same database answered differently and nothing said so.
-- Every replica writes its row at start and at each audit, reads its
-- peers' rows and logs (and shows on /readyz, to the admin and metrics
-- tokens) the settings that differ. The digests are HMAC-SHA256 under a
-- key derived from each master key the replica holds: neither the tokens
-- nor anything testable against a guessed token without that key.

-- +goose Up
CREATE TABLE sys_ai_replica (
  replica_id  CHAR(16)      CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'random, per serve process',
  host        VARCHAR(255)  NOT NULL DEFAULT '' COMMENT 'the host name and listen address, to find the replica by',
  version     VARCHAR(255)  NOT NULL DEFAULT '',
  settings    TEXT          NOT NULL COMMENT 'JSON: the master key id, and per key id held the keyed digest of each operator setting',
  start_time  DATETIME(3)   NOT NULL,
  seen_time   DATETIME(3)   NOT NULL COMMENT 'written at each audit: rows not seen lately are of stopped replicas',
  PRIMARY KEY (replica_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci COMMENT='serve replicas and their operator settings digests';

-- +goose Down
DROP TABLE IF EXISTS sys_ai_replica;
