-- History of point-in-time rollbacks of the memory store.
CREATE TABLE rollbacks (
  id text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  target timestamptz NOT NULL,
  actor text,
  removed integer NOT NULL,
  restored integer NOT NULL,
  reverted integer NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX rollbacks_tenant_idx ON rollbacks (tenant_id, created_at DESC);
