-- Each live state a memory had, as an interval of time: from the state event that gave it until
-- the memory's next state event (null while current). A replay snapshot at T is then the states
-- whose interval holds T, read in creation order straight from one index, instead of finding each
-- memory's last event before T among all of its events (O(history) per page at 100k memories).
-- Written with the events (shared/memory-events.ts); deletes, purges and rollbacks that removed a
-- memory close its interval and open none.
CREATE TABLE memory_states (
  event_id bigint PRIMARY KEY,        -- the state event; its `after` is the memory during the interval
  tenant_id text NOT NULL,
  memory_id uuid NOT NULL,
  valid_from timestamptz NOT NULL,
  valid_to timestamptz,
  created_at timestamptz NOT NULL,    -- the memory's creation: snapshot order
  expires_at timestamptz              -- fixed at creation; a state past it is gone
);
CREATE INDEX memory_states_order_idx ON memory_states (tenant_id, created_at, memory_id)
  INCLUDE (valid_from, valid_to, expires_at, event_id);
CREATE INDEX memory_states_open_idx ON memory_states (memory_id) WHERE valid_to IS NULL;
-- The few states with a TTL: their links die when the TTL runs out, before any event says so.
CREATE INDEX memory_states_ttl_idx ON memory_states (tenant_id) INCLUDE (memory_id, valid_from, valid_to, expires_at)
  WHERE expires_at IS NOT NULL;

-- Snapshots read this table by index; vacuum often enough that its visibility map stays current
-- (every closed interval is an update) and those scans need not visit the heap.
ALTER TABLE memory_states SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.02);

INSERT INTO memory_states (event_id, tenant_id, memory_id, valid_from, valid_to, created_at, expires_at)
SELECT s.id, s.tenant_id, s.memory_id, s.at, s.next_at, coalesce((s.after->>'created_at')::timestamptz, s.at), (s.after->>'expires_at')::timestamptz
FROM (
  SELECT e.id, e.tenant_id, e.memory_id, e.at, e.kind, e.after,
         lead(e.at) OVER (PARTITION BY e.tenant_id, e.memory_id ORDER BY e.at, e.id) AS next_at
  FROM memory_events e
  WHERE e.kind IN ('create', 'update', 'delete', 'expire', 'rollback')
) s
WHERE s.kind NOT IN ('delete', 'expire') AND s.after IS NOT NULL;
