import { eq, sql } from 'drizzle-orm';
import { cortexConfigs } from '../../schema/cortex';
import { type DbOrTx, rows } from '../platform/db';
import { live } from './access';
import { vectorSearchSettings } from './vector-search';

/**
 * What the Cortex config decides for everyone who reads it (the cortex family runs the passes, the
 * eval family scores conflicts and staleness by the same threshold and age): the tenant's row, or
 * the defaults of DESIGN §5 when it has none.
 */
export const CORTEX_DEFAULTS = {
  enabled: false,
  consolidation_enabled: true,
  consolidation_threshold: 0.9,
  reinforcement_enabled: true,
  decay_enabled: true,
  decay_age_days: 30,
  insight_generation_enabled: false,
} as const;

export type CortexConfigRow = typeof cortexConfigs.$inferSelect;

export async function cortexConfigRow(db: DbOrTx, tenantId: string): Promise<CortexConfigRow | null> {
  const [row] = await db.select().from(cortexConfigs).where(eq(cortexConfigs.tenantId, tenantId));
  return row ?? null;
}

/** The threshold and decay age in force for a tenant (defaults without a config row). */
export async function cortexSettings(db: DbOrTx, tenantId: string): Promise<{ threshold: number; decayAgeDays: number }> {
  const row = await cortexConfigRow(db, tenantId);
  return {
    // real → float8 keeps 0.9 as 0.8999999762; round back to the 4 decimals the API accepts.
    threshold: row ? Math.round(row.consolidationThreshold * 1e4) / 1e4 : CORTEX_DEFAULTS.consolidation_threshold,
    decayAgeDays: row?.decayAgeDays ?? CORTEX_DEFAULTS.decay_age_days,
  };
}

/** The tenant's live memories (not expired, not superseded), as `alias`. */
export const liveOf = (tenantId: string, now: Date, alias = 'm') =>
  sql`${sql.raw(alias)}.tenant_id = ${tenantId} AND ${sql.raw(alias)}.superseded_by IS NULL AND ${live(now, alias)}`;

/**
 * The nearest live neighbour of `m` in its space (alias `m` in the enclosing query) as rows
 * (id, distance): one bounded index probe (HNSW, the 8 nearest) over the indexed rows plus an exact look
 * at the few rows a rollback left out of the graph, never all pairs.
 */
export const nearestNeighbours = (tenantId: string, now: Date) => {
  // The graph probe takes the tenant's NEIGHBOURS nearest and filters them after the LIMIT: with the
  // per-row conditions inside, the planner estimates one row and scans the whole store per memory
  // (quadratic: 54 ms a memory at 10k); this way it is one HNSW probe (about 1.5 ms at 10k).
  const indexed = sql`(
    SELECT x.id, x.distance FROM (
      SELECT n.id, n.space_id, n.superseded_by, n.expires_at, n.embedding <=> m.embedding AS distance FROM memories n
      WHERE NOT n.index_pending AND n.tenant_id = ${tenantId}
      ORDER BY n.embedding <=> m.embedding LIMIT ${NEIGHBOURS}) x
    WHERE x.id <> m.id AND x.superseded_by IS NULL AND ${live(now, 'x')} AND x.space_id IS NOT DISTINCT FROM m.space_id
    ORDER BY x.distance LIMIT 1)`;
  const pending = sql`(
    SELECT n.id, n.embedding <=> m.embedding AS distance FROM memories n
    WHERE n.index_pending AND ${liveOf(tenantId, now, 'n')} AND n.id <> m.id AND n.space_id IS NOT DISTINCT FROM m.space_id
    ORDER BY n.embedding <=> m.embedding LIMIT 1)`;
  return sql`${indexed} UNION ALL ${pending}`;
};

/** Nearest neighbours a probe looks at: the nearest live one in the same space among them counts. */
const NEIGHBOURS = 8;

/** Another live memory of `m`'s space with its content hash (index memories_tenant_hash_idx), as rows (id, distance 0). */
export const sameHash = (tenantId: string, now: Date) => sql`(
  SELECT d.id, 0::float8 AS distance FROM memories d WHERE ${liveOf(tenantId, now, 'd')} AND d.content_hash = m.content_hash AND d.id <> m.id
    AND d.space_id IS NOT DISTINCT FROM m.space_id LIMIT 1)`;

/**
 * One page (keyset on id, `limit` rows) of the tenant's live memories, each with its near duplicate
 * in the same space (same content hash, or nearest neighbour at cosine ≥ threshold), or null.
 */
export async function nearDuplicatePage(db: DbOrTx, tenantId: string, now: Date, opts: { threshold: number; afterId: string | null; limit: number }) {
  const maxDistance = 1 - opts.threshold;
  // In a transaction of its own: the iterative-scan settings are transaction-local, and without them
  // the index's LIMIT 1 probe could come back empty when other tenants' rows fill its candidate list.
  return db.transaction(async (tx) => {
    await vectorSearchSettings(tx, 40);
    return rows<{ id: string; created_at: Date | string; dup: string | null }>(
      tx,
      sql`SELECT m.id, m.created_at, d.id AS dup FROM memories m
          LEFT JOIN LATERAL (
            SELECT x.id FROM (${sameHash(tenantId, now)} UNION ALL ${nearestNeighbours(tenantId, now)}) x
            WHERE x.distance <= ${maxDistance} ORDER BY x.distance, x.id LIMIT 1) d ON true
          WHERE ${liveOf(tenantId, now)} ${opts.afterId ? sql`AND m.id > ${opts.afterId}::uuid` : sql``}
          ORDER BY m.id LIMIT ${opts.limit}`,
    );
  });
}
