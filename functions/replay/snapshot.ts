import { type SQL, sql } from 'drizzle-orm';
import { type DbOrTx, rows } from '../../shared/platform/data/db';
import { edgeCtes, presentCtes, snapshotSettings, statesHolding } from '../../shared/memory/edge-history';
import { eventAfter } from '../../shared/memory/history';
import type { MemoryDto } from '../../shared/memory/rows';

export interface SnapshotEdge {
  edge_id: string;
  source_id: string;
  target_id: string;
  relation: string;
  weight: number;
}

/**
 * One statement for a snapshot page, so every part sees the same data: the memories present at
 * `at` (presentCtes) and their count, a page of them in creation order read straight from the
 * index (statesHolding) whose snapshots alone are read, and the edges of that moment (edgeCtes)
 * whose source is on the page, with their total. An edge's id is its current row's while it
 * exists, else a stable uuid derived from its latest creating event.
 */
export async function snapshotPage(db: DbOrTx, tenantId: string, at: Date, limit: number, offset: number) {
  const [result] = await db.transaction(async (tx) => {
    await snapshotSettings(tx);
    return rows<{ total: number | string; total_edges: number | string; memories: MemoryDto[] | string; edges: SnapshotEdge[] | string }>(
      tx,
      snapshotQuery(tenantId, at, limit, offset),
    );
  });
  return {
    total: Number(result.total),
    totalEdges: Number(result.total_edges),
    memories: parsed<MemoryDto[]>(result.memories),
    edges: parsed<SnapshotEdge[]>(result.edges),
  };
}

/**
 * The statement of `snapshotPage` (exported for EXPLAIN in the benchmark). The first page walks the
 * creation-order index and stops after it; a later one sorts `present` (read for the total anyway)
 * rather than walk most of the index a second time.
 */
export function snapshotQuery(tenantId: string, at: Date, limit: number, offset: number): SQL {
  return sql`
    WITH ${presentCtes(tenantId, at)},
    page AS (${
      offset === 0
        ? sql`${statesHolding(tenantId, at)} ORDER BY s.created_at, s.memory_id LIMIT ${limit} OFFSET ${offset}`
        : sql`SELECT p.memory_id, p.id, p.created_at FROM present p ORDER BY p.created_at, p.memory_id LIMIT ${limit} OFFSET ${offset}`
    }),
    ${edgeCtes(tenantId, at)},
    page_edges AS (
      SELECT d.source_id, d.target_id, d.relation,
             coalesce(me.id, md5(${tenantId} || ':' || d.event_id::text || ':' || d.source_id::text || ':' || d.target_id::text || ':' || d.relation)::uuid) AS edge_id,
             coalesce(d.weight, me.weight, 0) AS weight
      FROM edges d
      JOIN page p ON p.memory_id = d.source_id
      LEFT JOIN memory_edges me ON me.tenant_id = ${tenantId} AND me.source_id = d.source_id AND me.target_id = d.target_id AND me.relation = d.relation
    )
    SELECT
      (SELECT count(*) FROM present) AS total,
      (SELECT count(*) FROM edges) AS total_edges,
      (SELECT coalesce(json_agg(${eventAfter('e')} ORDER BY p.created_at, p.memory_id), '[]'::json)
         FROM page p JOIN memory_events e ON e.id = p.id) AS memories,
      (SELECT coalesce(json_agg(json_build_object(
                'edge_id', 'urn:uuid:' || d.edge_id, 'source_id', 'urn:uuid:' || d.source_id, 'target_id', 'urn:uuid:' || d.target_id,
                'relation', d.relation, 'weight', d.weight) ORDER BY p.created_at, p.memory_id, d.target_id, d.relation), '[]'::json)
         FROM page_edges d JOIN page p ON p.memory_id = d.source_id) AS edges`;
}

/** json columns come parsed from every driver we use; tolerate text anyway. */
const parsed = <T>(v: unknown): T => (typeof v === 'string' ? JSON.parse(v) : v) as T;
