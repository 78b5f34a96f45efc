-- Live event stream (docs/architecture.md#live-events): a key may hold a few open streams at once
-- (EVENT_STREAMS_PER_KEY), counted across instances. Without Redis each open stream holds a lease
-- row here, refreshed by its heartbeat and deleted when it ends; a crashed instance's leases lapse
-- at `expires_at` and maintenance deletes them.
CREATE TABLE event_stream_leases (
  id text PRIMARY KEY,                -- stm_...
  tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  key_id text NOT NULL,
  expires_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX event_stream_leases_key_idx ON event_stream_leases (key_id, expires_at);
CREATE INDEX event_stream_leases_expires_idx ON event_stream_leases (expires_at);
