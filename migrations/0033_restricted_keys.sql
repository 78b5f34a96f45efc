-- Restricted keys: a key minted by an unrestricted one that may call only the families its scopes
-- name, and optionally only for one agent's memories and a few spaces. NULL scopes is an
-- unrestricted key (every key issued by signup, verify, rotation or the operator API).
ALTER TABLE api_keys
  ADD COLUMN restricted boolean NOT NULL DEFAULT false,
  ADD COLUMN name text,
  ADD COLUMN scopes text[],
  ADD COLUMN agent_id text,
  ADD COLUMN space_ids uuid[],
  ADD CONSTRAINT api_keys_restricted_scopes CHECK (restricted = (scopes IS NOT NULL));
