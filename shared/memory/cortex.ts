import { eq } from 'drizzle-orm';
import { sql } from '../platform/data/db';
import { cortexConfigs } from '../../schema/cortex';
import { type Db, type DbOrTx, pgArray, rows } from '../platform/data/db';
import { sqlState } from '../platform/data/pg-errors';
import { live } from './access';
import { vectorSearchSettings } from './vector-search';

/**
 * What the Cortex config decides for everyone who reads it (the cortex family runs the passes, the
 * eval family scores conflicts and staleness by the same threshold and age): the tenant's row, or
 * the defaults of docs/architecture.md#eval-and-cortex when it has none.
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

/** Nearest neighbours a probe looks at, how many within reach it keeps, and the widest it keeps (cosine 0.5, the lowest threshold the config allows). */
const PROBED = 8;
const KEPT = 3;
const MAX_KEPT_DISTANCE = 0.5;
/** Memories probed per transaction. */
const PROBE_BATCH = 500;

/**
 * Up to KEPT nearest live memories of `m`'s space (alias `m` in the enclosing query) within
 * MAX_KEPT_DISTANCE, as rows (id, distance): one bounded HNSW probe of the tenant's PROBED nearest,
 * filtered after its LIMIT (with per-row conditions inside the planner scans the whole store per
 * memory), plus an exact look at the few rows a rollback left out of the graph. Never all pairs.
 */
const nearestNeighbours = (tenantId: string, now: Date) => sql`(
  SELECT y.id, y.distance FROM (
    (SELECT x.id, x.distance FROM (
      SELECT n.id, n.space_id, n.superseded_by, n.expires_at, n.embedding <=> m.embedding AS distance FROM memories n
      WHERE NOT n.index_pending AND n.tenant_id = ${tenantId}
      ORDER BY n.embedding <=> m.embedding LIMIT ${PROBED}) x
    WHERE x.id <> m.id AND x.superseded_by IS NULL AND ${live(now, 'x')} AND x.space_id IS NOT DISTINCT FROM m.space_id)
    UNION ALL
    (SELECT n.id, n.embedding <=> m.embedding AS distance FROM memories n
    WHERE n.index_pending AND ${liveOf(tenantId, now, 'n')} AND n.id <> m.id AND n.space_id IS NOT DISTINCT FROM m.space_id
    ORDER BY n.embedding <=> m.embedding LIMIT ${KEPT})) y
  WHERE y.distance <= ${MAX_KEPT_DISTANCE} ORDER BY y.distance, y.id LIMIT ${KEPT})`;

/** Live memories whose probe is missing, or stale because their text (so their embedding) or space changed. */
const unprobed = (tenantId: string, now: Date) => sql`${liveOf(tenantId, now)} AND NOT EXISTS (
  SELECT 1 FROM memory_neighbour_probes p WHERE p.memory_id = m.id AND p.content_hash = m.content_hash AND p.space_id IS NOT DISTINCT FROM m.space_id)`;

/**
 * Brings the near-duplicate index (migrations/0025) up to date for up to `limit` of the tenant's
 * memories, PROBE_BATCH per transaction; returns how many it probed. A re-probed memory's old pairs
 * go both ways (its embedding changed); a first probe keeps the pairs others found to it.
 */
export async function probeNeighbours(db: Db, tenantId: string, now: Date, limit = Number.POSITIVE_INFINITY): Promise<number> {
  let probed = 0;
  while (probed < limit) {
    const n = await retriedIfDeletedMeanwhile(() =>
      db.transaction(async (tx) => {
        await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${`neighbours:${tenantId}`}, 0))`);
        await vectorSearchSettings(tx, 40);
        // The tenant filter selects most of a single-tenant table, and then the planner prefers a
        // sequential scan and a sort per probe to the HNSW graph, which is far cheaper per probe.
        await tx.execute(sql`SELECT set_config('enable_seqscan', 'off', true)`);
        const todo = (
          await rows<{ id: string }>(
            tx,
            sql`SELECT m.id FROM memories m WHERE ${unprobed(tenantId, now)} ORDER BY m.id LIMIT ${Math.min(PROBE_BATCH, limit - probed)}`,
          )
        ).map((r) => r.id);
        if (!todo.length) return 0;
        const ids = sql`${pgArray(todo)}::uuid[]`;
        await tx.execute(sql`DELETE FROM memory_neighbours WHERE memory_id = ANY(${ids})
        OR neighbour_id IN (SELECT memory_id FROM memory_neighbour_probes WHERE memory_id = ANY(${ids}))`);
        await tx.execute(sql`INSERT INTO memory_neighbours (memory_id, neighbour_id, tenant_id, distance)
        SELECT m.id, x.id, ${tenantId}, x.distance FROM memories m CROSS JOIN LATERAL ${nearestNeighbours(tenantId, now)} x
        WHERE m.tenant_id = ${tenantId} AND m.id = ANY(${ids})
        ON CONFLICT (memory_id, neighbour_id) DO UPDATE SET distance = excluded.distance`);
        await tx.execute(sql`INSERT INTO memory_neighbour_probes (memory_id, tenant_id, content_hash, space_id, probed_at)
        SELECT m.id, m.tenant_id, m.content_hash, m.space_id, ${now.toISOString()} FROM memories m WHERE m.tenant_id = ${tenantId} AND m.id = ANY(${ids})
        ON CONFLICT (memory_id) DO UPDATE SET content_hash = excluded.content_hash, space_id = excluded.space_id, probed_at = excluded.probed_at`);
        return todo.length;
      }),
    );
    probed += n;
    if (n < PROBE_BATCH) break;
  }
  return probed;
}

/**
 * A memory deleted after a probe's statement took its snapshot but before its rows were checked
 * against `memories` fails the insert's foreign key (23503): the probe is computed again, on a
 * snapshot without that memory. Three times at most; the race needs a delete within milliseconds.
 */
async function retriedIfDeletedMeanwhile<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (err) {
      if (sqlState(err) !== '23503' || attempt >= 3) throw err;
    }
  }
}

/**
 * Up to `limit` tenants with live memories the near-duplicate index has not probed (or probed before
 * their text or space changed), the one served longest ago first: never probed, then by its latest
 * probe, then by its longest-waiting memory. A tenant served in one maintenance tick goes behind
 * the others in the next, so one large backlog cannot hold back everyone else's.
 */
export async function tenantsToProbe(db: DbOrTx, now: Date, limit: number): Promise<string[]> {
  const found = await rows<{ tenant_id: string }>(
    db,
    sql`WITH behind AS (
          SELECT m.tenant_id, min(m.created_at) AS waiting_since FROM memories m WHERE m.superseded_by IS NULL AND ${live(now)} AND NOT EXISTS (
            SELECT 1 FROM memory_neighbour_probes p WHERE p.memory_id = m.id AND p.content_hash = m.content_hash AND p.space_id IS NOT DISTINCT FROM m.space_id)
          GROUP BY m.tenant_id)
        SELECT b.tenant_id FROM behind b
        ORDER BY (SELECT max(p.probed_at) FROM memory_neighbour_probes p WHERE p.tenant_id = b.tenant_id) NULLS FIRST, b.waiting_since, b.tenant_id
        LIMIT ${limit}`,
  );
  return found.map((r) => r.tenant_id);
}

/**
 * For the whole-store statements of eval and Cortex, in the caller's transaction: their estimated
 * cost passes Postgres' JIT threshold, and compiling them would cost most of the statement's time.
 */
export const withoutJit = (tx: DbOrTx) => tx.execute(sql`SELECT set_config('jit', 'off', true)`);

/**
 * Near-duplicate pairs among the tenant's live memories (docs/architecture.md#eval-and-cortex): same content hash in a space
 * (each paired with the first of its group), or in the index (probes up to date) at cosine ≥
 * `threshold` in the same space. Rows (a, b) with their creation times.
 */
export const nearDuplicatePairs = (tenantId: string, now: Date, threshold: number) => sql`
  WITH l AS MATERIALIZED (SELECT m.id, m.space_id, m.content_hash, m.created_at FROM memories m WHERE ${liveOf(tenantId, now)}),
  hashed AS (SELECT l.id, first_value(l.id) OVER (PARTITION BY l.space_id, l.content_hash ORDER BY l.id) AS first FROM l),
  pair AS MATERIALIZED (
    SELECT id AS a, first AS b FROM hashed WHERE id <> first
    UNION
    SELECT p.memory_id, p.neighbour_id FROM memory_neighbours p WHERE p.tenant_id = ${tenantId} AND p.distance <= ${1 - threshold}),
  -- One side at a time (the fences fix the order): joined to both sides at once, the planner
  -- estimated a hash join over the cross product of the live rows (10^10 at 100k).
  half AS MATERIALIZED (SELECT pair.a, pair.b, a.space_id, a.created_at FROM pair JOIN l a ON a.id = pair.a)
  SELECT half.a, half.created_at AS a_created, b.id AS b, b.created_at AS b_created
  FROM half JOIN l b ON b.id = half.b
  WHERE b.space_id IS NOT DISTINCT FROM half.space_id`;
