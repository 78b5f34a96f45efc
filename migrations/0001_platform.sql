-- Platform spine: tenants, keys, signup, mail, counters, milestones, audit chain, outbox.
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE tenants (
  id text PRIMARY KEY,
  email text NOT NULL,
  tier text NOT NULL DEFAULT 'free' CHECK (tier IN ('free', 'starter', 'pro', 'enterprise')),
  email_verified_at timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE UNIQUE INDEX tenants_email_key ON tenants (lower(email));

-- Only the SHA-256 of a secret is stored. 'expired' is derived from expires_at / grace_expires_at.
CREATE TABLE api_keys (
  id text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  key_hash text NOT NULL UNIQUE,
  key_prefix text NOT NULL,
  status text NOT NULL CHECK (status IN ('active', 'grace', 'revoked')),
  created_at timestamptz NOT NULL,
  expires_at timestamptz,
  grace_expires_at timestamptz,
  revoked_at timestamptz,
  replaced_by text
);
CREATE INDEX api_keys_tenant_idx ON api_keys (tenant_id, created_at);
CREATE INDEX api_keys_prefix_idx ON api_keys (tenant_id, key_prefix);

CREATE TABLE signup_tokens (
  id text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  token_hash text NOT NULL UNIQUE,
  expires_at timestamptz NOT NULL,
  used_at timestamptz,
  created_at timestamptz NOT NULL
);
CREATE INDEX signup_tokens_tenant_idx ON signup_tokens (tenant_id);

-- Signup rate per client IP when no Redis is configured; the IP is stored hashed.
CREATE TABLE signup_attempts (
  ip_hash text NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX signup_attempts_ip_idx ON signup_attempts (ip_hash, created_at);

-- Mail stored by the default 'outbox' transport; read through the operator API.
CREATE TABLE mail_outbox (
  id text PRIMARY KEY,
  to_email text NOT NULL,
  subject text NOT NULL,
  body text NOT NULL,
  token text,
  created_at timestamptz NOT NULL
);
CREATE INDEX mail_outbox_to_idx ON mail_outbox (lower(to_email), created_at DESC);

-- Monthly quotas (bucket YYYY-MM), daily call counts (YYYY-MM-DD) and, without Redis, per-key
-- request windows. Updated only by row-locked increments so several instances stay exact.
CREATE TABLE usage_counters (
  tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  metric text NOT NULL,
  bucket text NOT NULL,
  value bigint NOT NULL DEFAULT 0,
  -- How many hits the last batched increment granted (lets one statement report old and new value).
  last_grant bigint NOT NULL DEFAULT 0,
  -- The ceiling that batch applied (null: none); travels in EXCLUDED to the conflict branch.
  last_limit bigint,
  expires_at timestamptz,
  PRIMARY KEY (tenant_id, metric, bucket)
);
CREATE INDEX usage_counters_expiry_idx ON usage_counters (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE milestones (
  tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  milestone text NOT NULL,
  achieved_at timestamptz NOT NULL,
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  PRIMARY KEY (tenant_id, milestone)
);

-- Per-tenant hash chain. The head row is locked by every append, so seq stays gapless.
-- first_seq/first_prev_hash let the chain verify from the first retained entry after pruning.
CREATE TABLE audit_heads (
  tenant_id text PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
  seq bigint NOT NULL DEFAULT 0,
  hash text NOT NULL DEFAULT '',
  first_seq bigint NOT NULL DEFAULT 1,
  first_prev_hash text NOT NULL DEFAULT ''
);

CREATE TABLE audit_log (
  tenant_id text NOT NULL,
  seq bigint NOT NULL,
  id text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL,
  operation text NOT NULL,
  resource_type text NOT NULL,
  resource_id text,
  actor text,
  request_id text,
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  prev_hash text NOT NULL,
  entry_hash text NOT NULL,
  PRIMARY KEY (tenant_id, seq)
);
CREATE INDEX audit_log_time_idx ON audit_log (tenant_id, created_at);

-- Append-only: updates never, deletes only inside a retention prune that sets engram.audit_prune.
CREATE FUNCTION audit_log_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' AND current_setting('engram.audit_prune', true) = 'on' THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION 'audit_log is append-only (% refused)', TG_OP;
END;
$$;
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION audit_log_guard();

-- Transactional outbox: jobs written with the business change, delivered at least once.
CREATE TABLE outbox (
  id text PRIMARY KEY,
  tenant_id text,
  topic text NOT NULL,
  payload jsonb NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'dead')),
  attempts integer NOT NULL DEFAULT 0,
  run_at timestamptz NOT NULL,
  locked_until timestamptz,
  last_error text,
  created_at timestamptz NOT NULL,
  done_at timestamptz
);
CREATE INDEX outbox_due_idx ON outbox (run_at) WHERE status = 'pending';
