-- Sessions of the console (/console): a person signed in with an API key. The row holds the
-- SHA-256 of the random session id the cookie carries, never the id itself nor the key; the key
-- is checked on every request through its id, so a revoked or expired key ends the session.
CREATE TABLE console_sessions (
  id_hash text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  key_id text NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
  csrf_token text NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX console_sessions_expiry_idx ON console_sessions (expires_at);
CREATE INDEX console_sessions_key_idx ON console_sessions (key_id);
