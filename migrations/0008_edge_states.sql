-- Each life of a link as an interval, like memory_states for memories: from its `link` event until
-- the first later event that ends it (an `unlink` or a new `link` of the same source, target and
-- relation, or a delete, expiry purge or removing rollback of either end); null while it lives. A
-- replay snapshot's edges at T are the intervals holding T whose two ends are present at T (an end
-- may have passed its TTL before the purge wrote its event), found without reading the event log.
-- Written with the events (shared/memory-events.ts).
CREATE TABLE edge_states (
  event_id bigint PRIMARY KEY,        -- the link event
  tenant_id text NOT NULL,
  source_id uuid NOT NULL,
  target_id uuid NOT NULL,
  relation text NOT NULL,
  weight real,
  valid_from timestamptz NOT NULL,
  valid_to timestamptz
);
CREATE INDEX edge_states_source_idx ON edge_states (tenant_id, source_id, valid_from)
  INCLUDE (target_id, relation, valid_to, weight);
CREATE INDEX edge_states_open_source_idx ON edge_states (source_id) WHERE valid_to IS NULL;
CREATE INDEX edge_states_open_target_idx ON edge_states (target_id) WHERE valid_to IS NULL;
ALTER TABLE edge_states SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.02);

WITH links AS (
  SELECT e.id, e.tenant_id, e.memory_id AS source_id, e.at,
         CASE WHEN e.metadata->>'target_id' LIKE 'urn:uuid:________-____-____-____-____________' THEN substr(e.metadata->>'target_id', 10)::uuid END AS target_id,
         e.metadata->>'relation' AS relation, (e.metadata->>'weight')::real AS weight, e.metadata->>'target_id' AS target_urn
  FROM memory_events e WHERE e.kind = 'link'
)
INSERT INTO edge_states (event_id, tenant_id, source_id, target_id, relation, weight, valid_from, valid_to)
SELECT l.id, l.tenant_id, l.source_id, l.target_id, l.relation, l.weight, l.at, least(
  (SELECT min(x.at) FROM memory_events x
   WHERE x.tenant_id = l.tenant_id AND x.memory_id = l.source_id AND (x.at, x.id) > (l.at, l.id)
     AND (x.kind IN ('delete', 'expire') OR (x.kind = 'rollback' AND x.after IS NULL)
          OR (x.kind IN ('link', 'unlink') AND x.metadata->>'target_id' = l.target_urn AND x.metadata->>'relation' = l.relation))),
  (SELECT min(x.at) FROM memory_events x
   WHERE x.tenant_id = l.tenant_id AND x.memory_id = l.target_id AND (x.at, x.id) > (l.at, l.id)
     AND (x.kind IN ('delete', 'expire') OR (x.kind = 'rollback' AND x.after IS NULL))))
FROM links l
WHERE l.target_id IS NOT NULL AND l.relation IS NOT NULL;
