import { type SQL } from 'drizzle-orm';
import { sql } from '../platform/data/db';
import { type DbOrTx, pgArray, rows } from '../platform/data/db';
import { analyticSettings } from './history';

/**
 * The memory store and its links as they were at a moment, read from the replay interval tables
 * (memory_states, edge_states; migrations 0007, 0008): replay snapshots, and the links a rollback
 * puts back (`edgesAt`). SQL fragments are CTEs to splice into one `WITH`, so a caller pays for
 * each scan once.
 */

/**
 * The memories that existed at `at`, as `(memory_id, id, created_at)`: the memory_states
 * intervals (migrations/0007) holding `at` whose TTL had not run out by then. `id` is the state
 * event, whose `after` is the memory as it was. One index (tenant, creation order) serves it, so
 * with ORDER BY created_at, memory_id and a LIMIT it reads no more than the page needs.
 */
export function statesHolding(tenantId: string, at: Date): SQL {
  const T = sql`${at.toISOString()}::timestamptz`;
  return sql`
    SELECT s.memory_id, s.event_id AS id, s.created_at FROM memory_states s
    WHERE s.tenant_id = ${tenantId} AND s.valid_from <= ${T} AND (s.valid_to IS NULL OR s.valid_to > ${T})
      AND (s.expires_at IS NULL OR s.expires_at > ${T})`;
}

/** CTE `present`: statesHolding, materialized once for the joins and counts of one statement. */
export const presentCtes = (tenantId: string, at: Date): SQL => sql`present AS MATERIALIZED (${statesHolding(tenantId, at)})`;

/**
 * CTE `edges (source_id, target_id, relation, at, event_id, weight)`: the links that existed at
 * `at`, the edge_states intervals (migrations/0008) holding it. Every event that ends a memory's
 * life closes its links' intervals, so both ends of an open link are present, except an end whose
 * TTL ran out before the purge wrote that event: the few states with a TTL (`lapsed`) are checked.
 * `at` and `event_id` are the link's latest creation. `touching` keeps only links with an end among
 * those memories.
 */
export function edgeCtes(tenantId: string, at: Date, touching?: string[]): SQL {
  const T = sql`${at.toISOString()}::timestamptz`;
  const ends = touching ? sql`AND (es.source_id = ANY(${pgArray(touching)}::uuid[]) OR es.target_id = ANY(${pgArray(touching)}::uuid[]))` : sql``;
  return sql`
    lapsed AS (
      SELECT s.memory_id FROM memory_states s
      WHERE s.tenant_id = ${tenantId} AND s.expires_at IS NOT NULL AND s.expires_at <= ${T}
        AND s.valid_from <= ${T} AND (s.valid_to IS NULL OR s.valid_to > ${T})
    ),
    edges AS MATERIALIZED (
      SELECT es.source_id, es.target_id, es.relation, es.valid_from AS at, es.event_id, es.weight
      FROM edge_states es
      WHERE es.tenant_id = ${tenantId} AND es.valid_from <= ${T} AND (es.valid_to IS NULL OR es.valid_to > ${T}) ${ends}
        AND NOT EXISTS (SELECT 1 FROM lapsed l WHERE l.memory_id IN (es.source_id, es.target_id))
    )`;
}

export interface PastEdge {
  source_id: string;
  target_id: string;
  relation: string;
  weight: number;
}

/**
 * analyticSettings, and no sequential scans: every part of presentCtes/edgeCtes has an index made
 * for it, but while autovacuum has not yet marked a fresh table's pages all-visible the planner
 * prices the index-only scans as heap fetches and would sort the whole history instead.
 */
export async function snapshotSettings(tx: DbOrTx) {
  await analyticSettings(tx);
  await tx.execute(sql`SET LOCAL enable_seqscan = off`);
}

/**
 * Every link that existed at `at` (bare uuids), with its weight, in one statement; with `touching`,
 * only those with an end among these memories (what a rollback that restores them puts back).
 */
export async function edgesAt(db: DbOrTx, tenantId: string, at: Date, touching?: string[]): Promise<PastEdge[]> {
  const found = await rows<PastEdge>(
    db,
    sql`WITH ${edgeCtes(tenantId, at, touching)}
        SELECT d.source_id::text AS source_id, d.target_id::text AS target_id, d.relation, coalesce(d.weight, 0) AS weight
        FROM edges d ORDER BY d.source_id, d.target_id, d.relation`,
  );
  return found.map((e) => ({ ...e, weight: Number(e.weight) }));
}
