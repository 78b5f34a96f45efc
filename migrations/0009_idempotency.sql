-- Idempotency-Key records (shared/platform/data/idempotency.ts): one row per tenant and key. The first
-- request inserts it as 'running' (the primary key makes concurrent requests with one key do the
-- work once); the work's own transaction marks it 'committed'; then its response is stored as 'done'. A repeat with the same request hash replays the
-- stored response; maintenance deletes rows after expires_at (24 h). Responses may hold secrets (a
-- rotated API key, a share token), so only the key's SHA-256 is stored and the body is encrypted
-- (AES-GCM) under a key derived from the Idempotency-Key itself, which only the client holds.
CREATE TABLE idempotency_keys (
  tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  key_hash text NOT NULL,
  request_hash text NOT NULL,
  status text NOT NULL CHECK (status IN ('running', 'committed', 'done')),
  -- A 'running' row whose request died (crash, timeout) may be taken over after this moment.
  locked_until timestamptz NOT NULL,
  response_status integer,
  response_headers jsonb,
  response_body text,                 -- base64 of IV || AES-GCM ciphertext
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, key_hash)
);
CREATE INDEX idempotency_keys_expiry_idx ON idempotency_keys (expires_at);
