import { type SQL, sql } from 'drizzle-orm';
import { cortexConfigs } from '../../schema/cortex';
import { tenants } from '../../schema/accounts';
import type { Trust } from '../../shared/memory/provenance';
import { COLUMNS, type MemoryRow, vectorLiteral } from '../../shared/memory/rows';
import { liveOf, nearDuplicatePairs, probeNeighbours, withoutJit } from '../../shared/memory/cortex';
import { type Db, type DbOrTx, pgArray, rows } from '../../shared/platform/data/db';

export type ConfigInsert = typeof cortexConfigs.$inferInsert;

export async function upsertConfig(db: DbOrTx, row: ConfigInsert) {
  const { tenantId: _t, ...set } = row;
  const [saved] = await db.insert(cortexConfigs).values(row).onConflictDoUpdate({ target: cortexConfigs.tenantId, set }).returning();
  return saved;
}

export async function recordRun(db: DbOrTx, tenantId: string, at: Date, stats: Record<string, unknown>) {
  await db
    .insert(cortexConfigs)
    .values({ tenantId, lastRunAt: at, runStats: stats, updatedAt: at })
    .onConflictDoUpdate({ target: cortexConfigs.tenantId, set: { lastRunAt: at, runStats: stats } });
}

/** Reinforce candidates: recall_count ≥ 3, recalled in the last 7 days, importance < 10, not reinforced by Cortex in the last 7 days. */
export const reinforceWhere = (tenantId: string, now: Date, weekAgo: Date) => sql`${liveOf(tenantId, now)}
  AND m.recall_count >= 3 AND m.last_recalled_at >= ${weekAgo.toISOString()} AND m.importance < 10
  AND NOT EXISTS (SELECT 1 FROM memory_events e WHERE e.tenant_id = ${tenantId} AND e.memory_id = m.id AND e.at > ${weekAgo.toISOString()}
                  AND e.actor = 'cortex' AND e.metadata->>'pass' = 'reinforce')`;

/** Decay candidates: older than the cutoff, not recalled since it, importance > 1. */
export const decayWhere = (tenantId: string, now: Date, cutoff: Date) => sql`${liveOf(tenantId, now)}
  AND m.created_at < ${cutoff.toISOString()} AND (m.last_recalled_at IS NULL OR m.last_recalled_at < ${cutoff.toISOString()}) AND m.importance > 1`;

/** One page (keyset on id) of the tenant's memories matching `where`. */
export const candidatePage = (db: DbOrTx, where: SQL, afterId: string | null, limit: number) =>
  rows<MemoryRow>(db, sql`SELECT ${COLUMNS} FROM memories m WHERE ${where} ${afterId ? sql`AND m.id > ${afterId}::uuid` : sql``} ORDER BY m.id LIMIT ${limit}`);

/** Locks one memory if it still matches `where` (re-checked inside the write). */
export async function lockIf(tx: DbOrTx, tenantId: string, id: string, where: SQL) {
  const [row] = await rows<MemoryRow>(
    tx,
    sql`SELECT ${COLUMNS} FROM memories m WHERE m.tenant_id = ${tenantId} AND m.id = ${id}::uuid AND ${where} FOR UPDATE`,
  );
  return row ?? null;
}

export async function update(tx: DbOrTx, tenantId: string, id: string, sets: SQL[], now: Date) {
  const [row] = await rows<MemoryRow & { embedding_text: string }>(
    tx,
    sql`UPDATE memories m SET ${sql.join([...sets, sql`version = m.version + 1`, sql`updated_at = ${now.toISOString()}`], sql`, `)}
        WHERE m.id = ${id}::uuid AND m.tenant_id = ${tenantId}
        RETURNING ${COLUMNS}, m.embedding::text AS embedding_text`,
  );
  return row;
}

/** Tenants with Cortex enabled, on a tier that has it, not run since `before`. */
export const dueTenants = (db: DbOrTx, before: Date, tiers: string[]) =>
  rows<{ id: string; tier: string; email: string }>(
    db,
    sql`SELECT t.id, t.tier, t.email FROM ${cortexConfigs} c JOIN ${tenants} t ON t.id = c.tenant_id
        WHERE c.enabled AND (c.last_run_at IS NULL OR c.last_run_at < ${before.toISOString()}) AND t.tier IN ${sql`(${sql.join(
          tiers.map((x) => sql`${x}`),
          sql`, `,
        )})`}
        ORDER BY t.id`,
  );

/** The tenant's near-duplicate pairs at `threshold`, after bringing the index up to date. */
export async function nearDuplicates(db: Db, tenantId: string, now: Date, threshold: number) {
  await probeNeighbours(db, tenantId, now);
  return db.transaction(async (tx) => {
    await withoutJit(tx);
    return rows<{ a: string; a_created: Date | string; b: string; b_created: Date | string }>(tx, nearDuplicatePairs(tenantId, now, threshold));
  });
}

// ---- insights

export const INSIGHT_TAG = 'insight';
export const INSIGHT_RELATION = 'derived_from';

/** Live memories written by Cortex as insights (tagged `insight`, created by the actor `cortex`), as alias `m`. */
const isInsight = (tenantId: string, alias = 'm') => sql`${sql.raw(alias)}.tags @> ARRAY[${INSIGHT_TAG}]::text[] AND EXISTS (
  SELECT 1 FROM memory_events e WHERE e.tenant_id = ${tenantId} AND e.memory_id = ${sql.raw(alias)}.id AND e.kind = 'create' AND e.actor = 'cortex')`;

/**
 * Index pairs within `maxDistance` in one space among live memories that are neither an insight
 * nor the source of a live insight (a cluster gets one insight).
 */
export function insightPairs(db: DbOrTx, tenantId: string, now: Date, maxDistance: number) {
  const eligible = (alias: string) => sql`${liveOf(tenantId, now, alias)} AND NOT (${isInsight(tenantId, alias)}) AND NOT EXISTS (
    SELECT 1 FROM memory_edges s JOIN memories i ON i.id = s.source_id
    WHERE s.target_id = ${sql.raw(alias)}.id AND s.relation = ${INSIGHT_RELATION} AND s.tenant_id = ${tenantId} AND ${liveOf(tenantId, now, 'i')})`;
  return rows<{ a: string; b: string }>(
    db,
    sql`SELECT p.memory_id AS a, p.neighbour_id AS b FROM memory_neighbours p
        JOIN memories x ON x.id = p.memory_id JOIN memories y ON y.id = p.neighbour_id
        WHERE p.tenant_id = ${tenantId} AND p.distance <= ${maxDistance} AND x.space_id IS NOT DISTINCT FROM y.space_id
          AND ${eligible('x')} AND ${eligible('y')}`,
  );
}

/** The memories `ids` of the tenant and their pairwise cosines (a < b). */
export async function pairwise(db: DbOrTx, tenantId: string, ids: string[]) {
  const list = sql`${pgArray(ids)}::uuid[]`;
  const [found, pairs] = await Promise.all([
    rows<{ id: string; observation: string; importance: number; space_id: string | null; trust: Trust }>(
      db,
      sql`SELECT m.id, m.observation, m.importance, m.space_id, m.trust FROM memories m WHERE m.tenant_id = ${tenantId} AND m.id = ANY(${list})`,
    ),
    rows<{ a: string; b: string; cosine: string | number }>(
      db,
      sql`SELECT a.id AS a, b.id AS b, 1 - (a.embedding <=> b.embedding) AS cosine FROM memories a JOIN memories b ON a.id < b.id
          WHERE a.tenant_id = ${tenantId} AND b.tenant_id = ${tenantId} AND a.id = ANY(${list}) AND b.id = ANY(${list})`,
    ),
  ]);
  return { rows: found, pairs };
}

export async function insertInsight(
  tx: DbOrTx,
  m: { id: string; tenantId: string; observation: string; importance: number; spaceId: string | null; hash: string; embedding: number[]; trust: Trust },
  now: Date,
) {
  // engram wrote it (`system`, in a job), from its sources: trusted no more than the least of them.
  const [row] = await rows<MemoryRow>(
    tx,
    sql`INSERT INTO memories AS m (id, tenant_id, observation, tags, importance, confidence, space_id, content_hash, embedding, created_at, updated_at,
                                   source_kind, source_via, trust)
        VALUES (${m.id}::uuid, ${m.tenantId}, ${m.observation}, ARRAY[${INSIGHT_TAG}]::text[], ${m.importance}, 1, ${m.spaceId}::uuid, ${m.hash},
                ${vectorLiteral(m.embedding)}::live_vector, ${now.toISOString()}, ${now.toISOString()}, 'system', 'job', ${m.trust})
        RETURNING ${COLUMNS}`,
  );
  return row;
}

export async function linkSources(tx: DbOrTx, tenantId: string, insightId: string, sources: { id: string; cosine: number }[], now: Date) {
  await tx.execute(sql`
    INSERT INTO memory_edges (id, tenant_id, source_id, target_id, relation, weight, created_at)
    SELECT gen_random_uuid(), ${tenantId}, ${insightId}::uuid, s.id, ${INSIGHT_RELATION}, s.weight, ${now.toISOString()}
    FROM unnest(${pgArray(sources.map((s) => s.id))}::uuid[], ${pgArray(sources.map((s) => s.cosine))}::real[]) AS s(id, weight)`);
}

/** A page of the tenant's live insights, newest first, and how many there are. */
export async function insights(db: DbOrTx, tenantId: string, now: Date, page: { limit: number; offset: number }) {
  const where = sql`${liveOf(tenantId, now)} AND ${isInsight(tenantId)}`;
  const [found, [{ n }]] = await Promise.all([
    rows<MemoryRow>(db, sql`SELECT ${COLUMNS} FROM memories m WHERE ${where} ORDER BY m.created_at DESC, m.id DESC LIMIT ${page.limit} OFFSET ${page.offset}`),
    rows<{ n: string | number }>(db, sql`SELECT count(*) AS n FROM memories m WHERE ${where}`),
  ]);
  return { page: found, total: Number(n) };
}
