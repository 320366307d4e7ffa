-- RFC 9207 (authorization server issuer identification): a provider whose
-- metadata says authorization_response_iss_parameter_supported sends iss
-- in every authorization response, and an answer without it is refused
-- (an attacker forwarding a mix-up's answer may have dropped it).

-- +goose Up
ALTER TABLE sys_ai_oauth_provider
  ADD COLUMN iss_supported CHAR(1) NOT NULL DEFAULT '0' COMMENT '1: every authorization response must carry iss (RFC 9207)';

-- +goose Down
ALTER TABLE sys_ai_oauth_provider DROP COLUMN iss_supported;
