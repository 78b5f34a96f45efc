-- Events (docs/architecture.md#webhooks-and-events, #live-events): every event a write emits is a
-- row here, in the write's transaction, numbered per tenant in commit order. The live stream
-- reads it after a sequence number; webhook deliveries read their payload from it.
ALTER TABLE audit_heads ADD COLUMN event_seq bigint NOT NULL DEFAULT 0;

CREATE TABLE events (
  id text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  -- Per tenant, taken under the tenant's head-row lock, so a higher seq never commits before a
  -- lower one. NULL for events sent to one webhook only (webhook.test), which are not streamed.
  seq bigint,
  type text NOT NULL,
  payload jsonb NOT NULL,             -- {id, type, created_at, tenant_id, data}: the raw webhook body
  created_at timestamptz NOT NULL
);
CREATE UNIQUE INDEX events_tenant_seq_idx ON events (tenant_id, seq) WHERE seq IS NOT NULL;
CREATE INDEX events_created_idx ON events (created_at);

CREATE TABLE webhooks (
  id text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  url text NOT NULL,
  events text[] NOT NULL,
  active boolean NOT NULL DEFAULT true,
  description text,
  format text NOT NULL CHECK (format IN ('raw', 'slack', 'discord')),
  secret text NOT NULL,               -- whsec_...; HMAC needs the secret itself, so it cannot be hashed
  previous_secret text,               -- still signs beside the new one until previous_secret_expires_at
  previous_secret_expires_at timestamptz,
  failing_since timestamptz,          -- first failed attempt of the current failing streak
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE INDEX webhooks_tenant_idx ON webhooks (tenant_id, created_at);

-- One row per delivery attempt.
CREATE TABLE webhook_deliveries (
  id text PRIMARY KEY,
  webhook_id text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  tenant_id text NOT NULL,
  event_id text NOT NULL,
  event_type text NOT NULL,
  attempt integer NOT NULL,
  status_code integer NOT NULL,       -- 0 when no HTTP answer came (refused, timeout, blocked address)
  success boolean NOT NULL,
  error text,
  duration_ms integer NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX webhook_deliveries_webhook_idx ON webhook_deliveries (webhook_id, created_at DESC);
