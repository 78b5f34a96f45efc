-- MCP sign-in (functions/oauth): clients registered with POST /oauth/register (RFC 7591), and
-- grants. A grant is a restricted key (api_keys row) of the consenting account; its row holds the
-- authorization code and the refresh token as SHA-256 hashes only, never the secrets. The access
-- token is the key's secret: its hash is the key's key_hash, replaced on every refresh.
CREATE TABLE oauth_clients (
  id text PRIMARY KEY,
  client_name text NOT NULL,
  redirect_uris text[] NOT NULL,
  created_at timestamptz NOT NULL
);

CREATE TABLE oauth_grants (
  id text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  key_id text NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
  client_id text NOT NULL,
  client_name text NOT NULL,
  redirect_uri text NOT NULL,
  resource text NOT NULL,
  code_hash text UNIQUE,
  code_challenge text NOT NULL,
  code_expires_at timestamptz NOT NULL,
  code_used_at timestamptz,
  refresh_hash text UNIQUE,
  previous_refresh_hash text,
  refresh_expires_at timestamptz,
  expires_at timestamptz,
  created_at timestamptz NOT NULL,
  last_used_at timestamptz,
  revoked_at timestamptz
);
CREATE INDEX oauth_grants_tenant_idx ON oauth_grants (tenant_id, created_at);
CREATE INDEX oauth_grants_key_idx ON oauth_grants (key_id);
CREATE INDEX oauth_grants_previous_refresh_idx ON oauth_grants (previous_refresh_hash);
