-- Replay (snapshot at a time, counterfactual recall) reads the event log by memory, newest state
-- first, and by the rarer kinds. These partial indexes let a snapshot of a large tenant find each
-- memory's last state at T with an index-only scan (no sort), its creation time and TTL without
-- touching the heap, and the deletes, rollbacks and links behind the edges without a full scan.
CREATE INDEX memory_events_state_idx ON memory_events (tenant_id, memory_id, at DESC, id DESC) INCLUDE (kind)
  WHERE kind IN ('create', 'update', 'delete', 'expire', 'rollback');
CREATE INDEX memory_events_create_idx ON memory_events (tenant_id, memory_id) INCLUDE (at)
  WHERE kind = 'create';
CREATE INDEX memory_events_ttl_idx ON memory_events (tenant_id, memory_id)
  WHERE kind = 'create' AND (after->>'expires_at') IS NOT NULL;
CREATE INDEX memory_events_rare_idx ON memory_events (tenant_id, at)
  WHERE kind IN ('delete', 'expire', 'rollback', 'link', 'unlink');
