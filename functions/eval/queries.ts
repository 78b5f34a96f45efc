import { and, asc, count, desc, eq, lt, sql } from 'drizzle-orm';
import { evalBaselines, evalRuns } from '../../schema/eval';
import { tenants } from '../../schema/accounts';
import { liveOf, nearDuplicatePairs, withoutJit } from '../../shared/memory/cortex';
import { vectorSearchSettings } from '../../shared/memory/vector-search';
import { type DbOrTx, rows } from '../../shared/platform/data/db';
import type { PageInput } from '../../shared/platform/data/pagination';

/**
 * memory_count, conflict_count and stale_count in one statement. A memory conflicts when it is in a
 * near-duplicate pair (shared/memory/cortex.ts: same content hash, or the near-duplicate index at
 * cosine ≥ threshold, both in one space): joins over the index, no graph probe per memory.
 */
export async function storeCounts(db: DbOrTx, tenantId: string, now: Date, opts: { threshold: number; staleBefore: Date }) {
  const stale = opts.staleBefore.toISOString();
  await withoutJit(db);
  const [r] = await rows<{ live: string | number; conflicts: string | number; stale: string | number }>(
    db,
    sql`WITH pairs AS (${nearDuplicatePairs(tenantId, now, opts.threshold)})
        SELECT count(*) AS live,
          (SELECT count(*) FROM (SELECT a FROM pairs UNION SELECT b FROM pairs) c) AS conflicts,
          count(*) FILTER (WHERE m.created_at < ${stale} AND (m.last_recalled_at IS NULL OR m.last_recalled_at < ${stale})) AS stale
        FROM memories m WHERE ${liveOf(tenantId, now)}`,
  );
  return { live: Number(r.live), conflicts: Number(r.conflicts), stale: Number(r.stale) };
}

/** Index scans for the graph probes that follow in this transaction (see probeNeighbours), then back to the planner's choice. */
async function withGraphProbes<T>(db: DbOrTx, k: number, probe: () => Promise<T>): Promise<T> {
  await vectorSearchSettings(db, k);
  await db.execute(sql`SELECT set_config('enable_seqscan', 'off', true)`);
  try {
    return await probe();
  } finally {
    await db.execute(sql`SELECT set_config('enable_seqscan', 'on', true)`);
  }
}

/** For each vector pair (query, expected): the best cosine between `expected` and the top `k` live memories nearest to `query`. */
export async function bestMatch(db: DbOrTx, tenantId: string, now: Date, query: string, expected: string, k: number): Promise<number> {
  const branch = (pending: boolean) => sql`(
    SELECT m.embedding, m.embedding <=> ${query}::live_vector AS distance FROM memories m
    WHERE ${pending ? sql`m.index_pending` : sql`NOT m.index_pending`} AND ${liveOf(tenantId, now)}
    ORDER BY distance LIMIT ${k})`;
  const [r] = await withGraphProbes(db, k, () =>
    rows<{ best: string | number | null }>(
      db,
      sql`SELECT max(1 - (t.embedding <=> ${expected}::live_vector)) AS best
        FROM (SELECT * FROM (${branch(false)} UNION ALL ${branch(true)}) u ORDER BY u.distance LIMIT ${k}) t`,
    ),
  );
  return r.best === null ? 0 : Number(r.best);
}

/**
 * Of the `n` most-recalled live memories, how many come back first when their own text (its stored
 * embedding) is searched among the live memories (ties on distance break on id, as search does).
 */
export async function selfRecall(db: DbOrTx, tenantId: string, now: Date, n: number) {
  const [r] = await withGraphProbes(db, 40, () =>
    rows<{ sampled: string | number; first: string | number }>(
      db,
      sql`SELECT count(*) AS sampled, count(*) FILTER (WHERE top.id = s.id) AS first
        FROM (SELECT m.id, m.embedding FROM memories m WHERE ${liveOf(tenantId, now)}
              ORDER BY m.recall_count DESC, m.created_at DESC, m.id LIMIT ${n}) s
        CROSS JOIN LATERAL (
          SELECT u.id FROM (
            (SELECT m.id, m.embedding <=> s.embedding AS distance FROM memories m WHERE NOT m.index_pending AND ${liveOf(tenantId, now)} ORDER BY distance LIMIT 5)
            UNION ALL
            (SELECT m.id, m.embedding <=> s.embedding AS distance FROM memories m WHERE m.index_pending AND ${liveOf(tenantId, now)} ORDER BY distance LIMIT 5)
          ) u ORDER BY u.distance, u.id LIMIT 1) top`,
    ),
  );
  return { sampled: Number(r.sampled), first: Number(r.first) };
}

export interface Window {
  n: number;
  importance: number | null;
}

/** The two windows [from, mid) and [mid, to] of live memories by creation: counts, mean importance, and the cosine of their centroids (null when one is empty). */
export async function windows(db: DbOrTx, tenantId: string, now: Date, from: Date, mid: Date, to: Date) {
  const w = (a: Date, b: Date, last: boolean) => sql`SELECT avg(m.embedding) AS v, count(*) AS n, avg(m.importance)::float8 AS imp FROM memories m
    WHERE ${liveOf(tenantId, now)} AND m.created_at >= ${a.toISOString()} AND m.created_at ${last ? sql`<=` : sql`<`} ${b.toISOString()}`;
  const [r] = await rows<{ pn: string | number; pi: number | null; cn: string | number; ci: number | null; cos: number | null }>(
    db,
    sql`WITH p AS (${w(from, mid, false)}), c AS (${w(mid, to, true)})
        SELECT p.n AS pn, p.imp AS pi, c.n AS cn, c.imp AS ci,
               CASE WHEN p.n > 0 AND c.n > 0 THEN 1 - (p.v <=> c.v) END AS cos
        FROM p, c`,
  );
  return {
    previous: { n: Number(r.pn), importance: r.pi === null ? null : Number(r.pi) } as Window,
    current: { n: Number(r.cn), importance: r.ci === null ? null : Number(r.ci) } as Window,
    cosine: r.cos === null ? null : Number(r.cos),
  };
}

/** Topic counts per window: tags, or when neither window has any tag, content words of 4+ letters. */
export async function topics(db: DbOrTx, tenantId: string, now: Date, from: Date, mid: Date, to: Date) {
  const range = sql`${liveOf(tenantId, now)} AND m.created_at >= ${from.toISOString()} AND m.created_at <= ${to.toISOString()}`;
  const side = sql`CASE WHEN m.created_at < ${mid.toISOString()} THEN 'p' ELSE 'c' END`;
  const tagRows = await rows<{ topic: string; side: 'p' | 'c'; n: string | number }>(
    db,
    sql`SELECT t.topic, ${side} AS side, count(*) AS n FROM memories m CROSS JOIN LATERAL unnest(m.tags) AS t(topic) WHERE ${range} GROUP BY 1, 2`,
  );
  if (tagRows.length) return { byTags: true, rows: tagRows };
  const wordRows = await rows<{ topic: string; side: 'p' | 'c'; n: string | number }>(
    db,
    sql`SELECT w.topic, ${side} AS side, count(*) AS n
        FROM memories m CROSS JOIN LATERAL regexp_split_to_table(lower(m.observation), '[^a-z]+') AS w(topic)
        WHERE ${range} AND length(w.topic) >= 4 GROUP BY 1, 2`,
  );
  return { byTags: false, rows: wordRows };
}

// ---- runs

export async function insertRun(db: DbOrTx, row: typeof evalRuns.$inferInsert) {
  const [created] = await db.insert(evalRuns).values(row).returning();
  return created;
}

export async function runsSince(db: DbOrTx, tenantId: string, since: Date): Promise<number> {
  const [r] = await rows<{ n: string | number }>(
    db,
    sql`SELECT count(*) AS n FROM eval_runs WHERE tenant_id = ${tenantId} AND created_at >= ${since.toISOString()}`,
  );
  return Number(r.n);
}

export async function history(db: DbOrTx, tenantId: string, page: PageInput) {
  const where = eq(evalRuns.tenantId, tenantId);
  const [found, [{ n }]] = await Promise.all([
    db.select().from(evalRuns).where(where).orderBy(desc(evalRuns.createdAt), desc(evalRuns.id)).limit(page.limit).offset(page.offset),
    db.select({ n: count() }).from(evalRuns).where(where),
  ]);
  return { page: found, total: Number(n) };
}

/** Deletes runs of tenants of `tier` created before `before`; how many. */
export async function pruneRuns(db: DbOrTx, tier: string, before: Date): Promise<number> {
  const gone = await db
    .delete(evalRuns)
    .where(and(lt(evalRuns.createdAt, before), sql`${evalRuns.tenantId} IN (SELECT ${tenants.id} FROM ${tenants} WHERE ${tenants.tier} = ${tier})`))
    .returning({ id: evalRuns.id });
  return gone.length;
}

// ---- baselines

export const baselines = (db: DbOrTx, tenantId: string) =>
  db.select().from(evalBaselines).where(eq(evalBaselines.tenantId, tenantId)).orderBy(asc(evalBaselines.createdAt), asc(evalBaselines.id));

export async function countBaselines(db: DbOrTx, tenantId: string): Promise<number> {
  const [{ n }] = await db.select({ n: count() }).from(evalBaselines).where(eq(evalBaselines.tenantId, tenantId));
  return Number(n);
}

export async function insertBaseline(db: DbOrTx, row: typeof evalBaselines.$inferInsert) {
  const [created] = await db.insert(evalBaselines).values(row).returning();
  return created;
}

export async function deleteBaseline(db: DbOrTx, tenantId: string, id: string): Promise<boolean> {
  const gone = await db
    .delete(evalBaselines)
    .where(and(eq(evalBaselines.tenantId, tenantId), eq(evalBaselines.id, id)))
    .returning({ id: evalBaselines.id });
  return gone.length > 0;
}
