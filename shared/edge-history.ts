import { type SQL, sql } from 'drizzle-orm';
import { type DbOrTx, rows } from './db';
import { analyticSettings } from './memory-history';

/**
 * The memory store's links as they were at a moment, rebuilt from the event log (replay snapshots;
 * a rollback can use `edgesAt` to put back the links that existed at its target). SQL fragments
 * are CTE lists to splice into one `WITH`, so a caller pays for each scan once.
 */

/**
 * The uuid of a `urn:uuid:<uuid>` text expression as toUrn writes it; null for any other shape.
 * A LIKE on the shape instead of a regex: a regex costs microseconds per row, and a snapshot reads
 * every link event of the tenant.
 */
const uuidOfUrn = (text: SQL) =>
  sql`CASE WHEN ${text} LIKE 'urn:uuid:________-____-____-____-____________' THEN substr(${text}, 10)::uuid END`;

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
 * CTEs ending in `edges (source_id, target_id, relation, at)`, the links that existed at `at`;
 * needs `present` (presentCtes) in the same WITH. Also defines `creations` (every link creation up
 * to `at`: id, at, source_id, target_id, relation, weight).
 *
 * An edge (source, target, relation) is created by a `link` event: source = the event's memory,
 * target = `metadata.target_id`, with `relation` and `weight`. Whoever inserts a memory_edges row
 * writes one (store's auto-link; a rollback that puts links back must too, or replay cannot see
 * them). It exists at `at` when it was created by then, no `unlink` came after its latest
 * creation, both ends are present at `at`, and neither end was deleted, purged or rolled away
 * after that creation (edges die with their ends). Current `memory_edges` rows created by `at`
 * that no event describes count as well. `at` of an edge is its latest creation.
 */
export function edgeCtes(tenantId: string, at: Date): SQL {
  const T = sql`${at.toISOString()}::timestamptz`;
  return sql`
    aux AS MATERIALIZED (
      SELECT e.id, e.memory_id, e.kind, e.at, e.after IS NULL AS no_after,
             CASE WHEN e.kind IN ('link', 'unlink') THEN ${uuidOfUrn(sql`(e.metadata->>'target_id')`)} END AS target_id,
             CASE WHEN e.kind IN ('link', 'unlink') THEN e.metadata->>'relation' END AS relation,
             CASE WHEN e.kind = 'link' THEN (e.metadata->>'weight')::real END AS weight
      FROM memory_events e
      WHERE e.tenant_id = ${tenantId} AND e.at <= ${T} AND e.kind IN ('delete', 'expire', 'rollback', 'link', 'unlink')
    ),
    gone AS (
      SELECT a.memory_id, max(a.at) AS at FROM aux a
      WHERE a.kind IN ('delete', 'expire') OR (a.kind = 'rollback' AND a.no_after)
      GROUP BY a.memory_id
    ),
    creations AS MATERIALIZED (
      SELECT a.id, a.at, a.memory_id AS source_id, a.target_id, a.relation, a.weight FROM aux a WHERE a.kind = 'link'
    ),
    unlinked AS (
      SELECT a.memory_id AS source_id, a.target_id, a.relation, max(a.at) AS at FROM aux a WHERE a.kind = 'unlink' GROUP BY 1, 2, 3
    ),
    link_keys AS (
      SELECT c.source_id, c.target_id, c.relation, max(c.at) AS at FROM creations c
      WHERE c.source_id IS NOT NULL AND c.target_id IS NOT NULL AND c.relation IS NOT NULL
      GROUP BY 1, 2, 3
    ),
    candidates AS (
      SELECT k.source_id, k.target_id, k.relation, k.at
      FROM link_keys k
      LEFT JOIN unlinked u ON u.source_id = k.source_id AND u.target_id = k.target_id AND u.relation = k.relation
      WHERE u.at IS NULL OR u.at < k.at
      UNION ALL
      SELECT me.source_id, me.target_id, me.relation, me.created_at
      FROM memory_edges me
      WHERE me.tenant_id = ${tenantId} AND me.created_at <= ${T}
        AND NOT EXISTS (SELECT 1 FROM link_keys k WHERE k.source_id = me.source_id AND k.target_id = me.target_id AND k.relation = me.relation)
        AND NOT EXISTS (SELECT 1 FROM unlinked u WHERE u.source_id = me.source_id AND u.target_id = me.target_id AND u.relation = me.relation)
    ),
    edges AS MATERIALIZED (
      SELECT c.source_id, c.target_id, c.relation, c.at
      FROM candidates c
      JOIN present s ON s.memory_id = c.source_id
      JOIN present t ON t.memory_id = c.target_id
      LEFT JOIN gone gs ON gs.memory_id = c.source_id
      LEFT JOIN gone gt ON gt.memory_id = c.target_id
      WHERE (gs.at IS NULL OR gs.at < c.at) AND (gt.at IS NULL OR gt.at < c.at)
    )`;
}

/** Weight of an edge of `edges`, and the id of the event that last created it (null for a current row no event describes). */
export const latestCreationsOf = (sources: SQL) => sql`
  SELECT DISTINCT ON (c.source_id, c.target_id, c.relation) c.source_id, c.target_id, c.relation, c.id, c.weight
  FROM creations c WHERE c.source_id IN (${sources})
  ORDER BY c.source_id, c.target_id, c.relation, c.at DESC, c.id DESC`;

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
 * Every link that existed at `at` (bare uuids), with its weight, in one statement. Inside a
 * caller's transaction it runs in a savepoint, and its settings (analyticSettings) last until that
 * transaction ends.
 */
export async function edgesAt(db: DbOrTx, tenantId: string, at: Date): Promise<PastEdge[]> {
  return db.transaction(async (tx) => {
    await snapshotSettings(tx);
    const found = await rows<PastEdge>(
      tx,
      sql`WITH ${presentCtes(tenantId, at)}, ${edgeCtes(tenantId, at)}
          SELECT d.source_id::text AS source_id, d.target_id::text AS target_id, d.relation, coalesce(lc.weight, me.weight, 0) AS weight
          FROM edges d
          LEFT JOIN (${latestCreationsOf(sql`SELECT source_id FROM edges`)}) lc
            ON lc.source_id = d.source_id AND lc.target_id = d.target_id AND lc.relation = d.relation
          LEFT JOIN memory_edges me ON me.tenant_id = ${tenantId} AND me.source_id = d.source_id AND me.target_id = d.target_id AND me.relation = d.relation
          ORDER BY d.source_id, d.target_id, d.relation`,
    );
    return found.map((e) => ({ ...e, weight: Number(e.weight) }));
  });
}
