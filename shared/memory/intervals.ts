import { type SQL } from 'drizzle-orm';
import { sql } from '../platform/data/db';
import type { DbOrTx } from '../platform/data/db';
import { STATE_KINDS_SQL } from './history';

/**
 * The uuid of a `urn:uuid:<uuid>` text expression as toUrn writes it; null for any other shape.
 * A LIKE on the shape instead of a regex: a regex costs microseconds per row.
 */
export const uuidOfUrn = (text: SQL) => sql`CASE WHEN ${text} LIKE 'urn:uuid:________-____-____-____-____________' THEN substr(${text}, 10)::uuid END`;

/** SQL predicate: event `alias` ends its memory's life (delete, expiry purge, rollback that removed it). */
const endsMemory = (alias: string) => {
  const e = sql.raw(alias);
  return sql`(${e}.kind IN ('delete', 'expire') OR (${e}.kind = 'rollback' AND ${e}.after IS NULL))`;
};

/**
 * CTEs for the statement that appends events (recordMemoryEvents), after a CTE `inserted` (the
 * new events: id, tenant_id, memory_id, kind, at, after, metadata), before its main query: keeps the interval tables
 * of replay in step, in the same statement, so they can never disagree with the log.
 *
 * - memory_states (migrations/0007): a state event closes its memory's open interval and, when it
 *   leaves a live state, opens the next; several events of one memory in a chunk chain by `lead`.
 * - edge_states (migrations/0008): a `link` event opens a link's interval; an `unlink` or re-`link`
 *   of the same key, or the end of either end's life, closes it. Links already open are closed by
 *   an UPDATE; links opened in this statement (which the UPDATE cannot see) get their end from the
 *   later events of the same statement.
 */
export const maintainIntervals = sql`
  states AS (
    SELECT i.id, i.tenant_id, i.memory_id, i.kind, i.at, i.after,
           lead(i.at) OVER (PARTITION BY i.memory_id ORDER BY i.at, i.id) AS next_at,
           row_number() OVER (PARTITION BY i.memory_id ORDER BY i.at, i.id) AS nth
    FROM inserted i WHERE i.kind IN (${STATE_KINDS_SQL})),
  states_closed AS (
    UPDATE memory_states ms SET valid_to = st.at FROM states st
    WHERE st.nth = 1 AND ms.memory_id = st.memory_id AND ms.tenant_id = st.tenant_id AND ms.valid_to IS NULL),
  links AS (
    SELECT i.id, i.tenant_id, i.memory_id AS source_id, i.kind, i.at, ${uuidOfUrn(sql`(i.metadata->>'target_id')`)} AS target_id,
           i.metadata->>'relation' AS relation, (i.metadata->>'weight')::real AS weight
    FROM inserted i WHERE i.kind IN ('link', 'unlink')),
  ended AS (SELECT i.tenant_id, i.memory_id, i.at, i.id FROM inserted i WHERE ${endsMemory('i')}),
  edges_closed AS (
    UPDATE edge_states es SET valid_to = c.at
    FROM (
      SELECT event_id, min(at) AS at FROM (
        SELECT es2.event_id, k.at FROM ended k JOIN edge_states es2 ON es2.source_id = k.memory_id AND es2.valid_to IS NULL AND es2.tenant_id = k.tenant_id
        UNION ALL
        SELECT es2.event_id, k.at FROM ended k JOIN edge_states es2 ON es2.target_id = k.memory_id AND es2.valid_to IS NULL AND es2.tenant_id = k.tenant_id
        UNION ALL
        SELECT es2.event_id, l.at FROM links l JOIN edge_states es2 ON es2.source_id = l.source_id AND es2.valid_to IS NULL AND es2.tenant_id = l.tenant_id
          AND es2.target_id = l.target_id AND es2.relation = l.relation
      ) enders GROUP BY event_id
    ) c
    WHERE es.event_id = c.event_id),
  edges_opened AS (
    INSERT INTO edge_states (event_id, tenant_id, source_id, target_id, relation, weight, valid_from, valid_to)
    SELECT l.id, l.tenant_id, l.source_id, l.target_id, l.relation, l.weight, l.at, (
      SELECT min(x.at) FROM (
        SELECT k.at, k.id FROM ended k WHERE k.memory_id IN (l.source_id, l.target_id)
        UNION ALL
        SELECT n.at, n.id FROM links n WHERE n.source_id = l.source_id AND n.target_id = l.target_id AND n.relation = l.relation
      ) x WHERE (x.at, x.id) > (l.at, l.id))
    FROM links l WHERE l.kind = 'link' AND l.target_id IS NOT NULL AND l.relation IS NOT NULL),
  states_opened AS (
    INSERT INTO memory_states (event_id, tenant_id, memory_id, valid_from, valid_to, created_at, expires_at)
    SELECT st.id, st.tenant_id, st.memory_id, st.at, st.next_at,
           coalesce((st.after->>'created_at')::timestamptz, st.at), (st.after->>'expires_at')::timestamptz
    FROM states st WHERE st.kind NOT IN ('delete', 'expire') AND st.after IS NOT NULL)`;

/**
 * Rebuilds a tenant's memory_states and edge_states from its event log (the backfills of
 * migrations/0007 and 0008): for events written without recordMemoryEvents, such as a bulk import.
 */
export async function rebuildReplayIntervals(db: DbOrTx, tenantId: string) {
  await db.execute(sql`DELETE FROM memory_states WHERE tenant_id = ${tenantId}`);
  await db.execute(sql`DELETE FROM edge_states WHERE tenant_id = ${tenantId}`);
  await db.execute(sql`
    INSERT INTO memory_states (event_id, tenant_id, memory_id, valid_from, valid_to, created_at, expires_at)
    SELECT s.id, s.tenant_id, s.memory_id, s.at, s.next_at, coalesce((s.after->>'created_at')::timestamptz, s.at), (s.after->>'expires_at')::timestamptz
    FROM (
      SELECT e.id, e.tenant_id, e.memory_id, e.at, e.kind, e.after,
             lead(e.at) OVER (PARTITION BY e.memory_id ORDER BY e.at, e.id) AS next_at
      FROM memory_events e
      WHERE e.tenant_id = ${tenantId} AND e.kind IN (${STATE_KINDS_SQL})
    ) s
    WHERE s.kind NOT IN ('delete', 'expire') AND s.after IS NOT NULL`);
  await db.execute(sql`
    WITH links AS (
      SELECT e.id, e.tenant_id, e.memory_id AS source_id, e.at, ${uuidOfUrn(sql`(e.metadata->>'target_id')`)} AS target_id,
             e.metadata->>'relation' AS relation, (e.metadata->>'weight')::real AS weight, e.metadata->>'target_id' AS target_urn
      FROM memory_events e WHERE e.tenant_id = ${tenantId} AND e.kind = 'link'
    )
    INSERT INTO edge_states (event_id, tenant_id, source_id, target_id, relation, weight, valid_from, valid_to)
    SELECT l.id, l.tenant_id, l.source_id, l.target_id, l.relation, l.weight, l.at, least(
      (SELECT min(x.at) FROM memory_events x
       WHERE x.tenant_id = l.tenant_id AND x.memory_id = l.source_id AND (x.at, x.id) > (l.at, l.id)
         AND (${endsMemory('x')} OR (x.kind IN ('link', 'unlink') AND x.metadata->>'target_id' = l.target_urn AND x.metadata->>'relation' = l.relation))),
      (SELECT min(x.at) FROM memory_events x
       WHERE x.tenant_id = l.tenant_id AND x.memory_id = l.target_id AND (x.at, x.id) > (l.at, l.id) AND ${endsMemory('x')}))
    FROM links l
    WHERE l.target_id IS NOT NULL AND l.relation IS NOT NULL`);
}
