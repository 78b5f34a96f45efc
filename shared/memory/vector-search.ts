import { type SQL } from 'drizzle-orm';
import { sql } from '../platform/data/db';
import { type Db, type DbOrTx, preparedRows, readWithSettings, rows, type StorageKind } from '../platform/data/db';
import { LIVE_MEMORIES } from '../platform/data/usage';

/**
 * The rows of `memories m` matching `where`, nearest to `vector` by cosine first, with
 * `similarity` (1 − distance) added to `select`. Two branches: the HNSW index serves rows in the
 * graph, and an exact scan serves the few a rollback left index_pending (migrations/0006), so a
 * search sees every row at once whatever the state of the graph. Ties break on `m.id`, among the
 * rows the branches kept: which of several rows tied at a branch's LIMIT it keeps is the scan's
 * choice (ordering the branch by id too would cost the index path, which cannot provide it). Each branch
 * orders by its `distance` column, which the planner matches to the index's ordering operator, so
 * the query vector (a 5 KB parameter) is sent and parsed once per branch, not twice.
 *
 * Run it after vectorSearchSettings when `where` filters much: the index then keeps reading until
 * enough rows pass.
 */
export function nearestMemories(select: SQL, where: SQL, vector: string, page: { limit: number; offset?: number }): SQL {
  const offset = page.offset ?? 0;
  const branch = (pending: boolean) => sql`(
    SELECT ${select}, m.embedding <=> ${vector}::live_vector AS distance
    FROM memories m WHERE ${pending ? sql`m.index_pending` : sql`NOT m.index_pending`} AND ${where}
    ORDER BY distance LIMIT ${page.limit + offset})`;
  return sql`
    SELECT n.*, 1 - n.distance AS similarity FROM (${branch(false)} UNION ALL ${branch(true)}) n
    ORDER BY n.distance, n.id LIMIT ${page.limit} OFFSET ${offset}`;
}

/** A cosine similarity as a score in [0, 1]: opposite vectors score 0. */
export const clamp01 = (x: number) => Math.min(1, Math.max(0, x));

/**
 * nearestMemories for a whole tenant's store (`where`: `tenantId`'s live rows, no narrower filter), in
 * a statement whose plan can be kept: run as a named prepared statement (vectorRead's keepPlan),
 * PostgreSQL parses and plans it once per connection, where parsing and planning every search cost
 * more than running it. A kept
 * plan cannot weigh the tenant, so the statement carries both ways to the rows and picks one when it
 * runs, from the tenant's live count (usage_counters) and the table's size (pg_class), as walkCap says:
 * - a walk of the HNSW graph, nearest first over every tenant's rows, keeping the tenant's, until it
 *   has `k` or has visited `cap` rows;
 * - an exact scan of the tenant's rows: for a small tenant (the walk would visit mostly other tenants'
 *   rows), and whenever the walk came back short, so that a search never answers fewer rows than
 *   the tenant has.
 * Neither runs unless chosen. Rows a rollback left index_pending come from their own branch, as in
 * nearestMemories. The query vector is sent once. The exact scan, which sorts anyway, breaks ties
 * at its LIMIT by id.
 *
 * Only for the whole store: a filter (tags, agent, space) passes an unknown part of the tenant's
 * rows, which only the planner's statistics can weigh (a walk for a rare tag visits thousands of rows
 * for nothing), so filtered searches keep nearestMemories, planned per search.
 */
export function nearestInTenant(select: SQL, where: SQL, vector: string, page: { limit: number; offset?: number }, tenantId: string): SQL {
  const offset = page.offset ?? 0;
  const k = page.limit + offset;
  const distance = sql`m.embedding <=> (SELECT v FROM query)`;
  return sql`
    WITH query AS (SELECT ${vector}::live_vector AS v),
    walk_cap AS (SELECT ${walkCap(k)} AS cap FROM (SELECT
      coalesce((SELECT value FROM usage_counters WHERE tenant_id = ${tenantId} AND metric = ${LIVE_MEMORIES.metric} AND bucket = ${LIVE_MEMORIES.bucket}), 0)::float8 AS live,
      coalesce((SELECT reltuples FROM pg_class WHERE oid = 'memories'::regclass), 0)::float8 AS rows) c),
    walk AS (SELECT ${select}, m.distance FROM (
        SELECT m.*, ${distance} AS distance FROM memories m WHERE NOT m.index_pending
        ORDER BY distance LIMIT (SELECT cap FROM walk_cap)) m
      WHERE ${where} LIMIT ${k}),
    walked AS (SELECT count(*) >= ${k} AS enough FROM walk),
    exact AS MATERIALIZED (SELECT ${select}, (${distance}) + 0 AS distance FROM memories m
      WHERE NOT m.index_pending AND ${where} ORDER BY distance, m.id LIMIT ${k})
    SELECT n.*, 1 - n.distance AS similarity FROM (
      (SELECT * FROM walk WHERE (SELECT enough FROM walked))
      UNION ALL (SELECT * FROM exact WHERE NOT (SELECT enough FROM walked))
      UNION ALL (
      SELECT ${select}, ${distance} AS distance FROM memories m
      WHERE m.index_pending AND ${where}
      ORDER BY distance LIMIT ${k})) n
    ORDER BY n.distance, n.id LIMIT ${page.limit} OFFSET ${offset}`;
}

/**
 * How many rows nearestInTenant's walk may visit for `k` of a tenant's rows; 0: no walk, the exact
 * scan answers. A tenant holding `share` of the table's rows needs about k / share of them visited;
 * the cap is twice that. The walk is taken while its cap stays within a quarter of the tenant's live
 * count: a row the walk visits costs an order of magnitude more than a row the exact scan reads,
 * and on small graphs the walk costs less. For
 * k = 10 that walks for a tenant of 540 among 3,630 rows (the planner also chose the index there,
 * test/vector-plan.test.ts), 2,830 among 100,000, 8,950 among a million. A tenant of fewer than 300
 * is always scanned exactly (cheap at that size, and exact where a graph of a few rows can miss one). The
 * `+ 0` in the exact scan's order keeps the kept plan off the graph there. A table never analyzed
 * counts as the tenant's rows.
 */
const WALK_MIN_LIVE = 300;
const WALK_SLACK = 2;
const WALK_SHARE_OF_LIVE = 4;
const WALK_MAX_ROWS = 2_000;
const walkCap = (k: number) => {
  const cap = `ceil(${WALK_SLACK * k} * greatest(rows, live) / greatest(live, 1))`;
  return sql.raw(`CASE WHEN live >= ${WALK_MIN_LIVE} AND ${cap} <= least(live / ${WALK_SHARE_OF_LIVE}, ${WALK_MAX_ROWS}) THEN ${cap}::bigint ELSE 0 END`);
};

/**
 * The settings nearestMemories wants for `n` rows: a candidate list as long, iterative scans
 * (pgvector 0.8) so that filters after the index do not starve the result, and no JIT (JIT_OFF).
 */
const searchSettings = (n: number) => ({
  'hnsw.ef_search': String(Math.max(40, Math.min(n, 1000))),
  'hnsw.iterative_scan': 'relaxed_order',
  random_page_cost: RANDOM_PAGE_COST,
  jit: JIT_OFF,
});

/** For nearestMemories in the caller's transaction, until it ends. One round trip. */
export async function vectorSearchSettings(tx: DbOrTx, n: number) {
  const set = Object.entries(searchSettings(n)).map(([name, value]) => sql`set_config(${name}, ${value}, true)`);
  await tx.execute(sql`SELECT ${sql.join(set, sql`, `)}`);
}

/**
 * The planner's price of a page read out of order. pgvector prices an HNSW scan by the index pages
 * it expects to visit, each at random_page_cost, and on a small graph it expects most of them: at
 * PostgreSQL's default of 4 (a spinning disk with little cache) a tenant of a few hundred memories
 * alone in its database was scanned exactly instead of through the cheaper index, and so was a
 * tenant holding a seventh of the table. 1.1 is what PostgreSQL's
 * documentation suggests for solid-state storage, and these pages are mostly cached. A small tenant
 * among many is still scanned exactly (test/vector-plan.test.ts). It is a session setting, so every
 * statement of the session plans with it.
 */
const RANDOM_PAGE_COST = '1.1';

/**
 * No JIT compiling. A nearest-neighbour read of a big tenant is priced past PostgreSQL's
 * jit_above_cost by the exact scan it falls back to, though it runs as a short walk of the graph:
 * on a tenant of 250,000, the first five reads of each new connection (custom plans, before its
 * generic plan) each spent 47 to 82 ms compiling, where the read itself takes a few. engram's
 * statements are short; the ones that priced past the threshold before (history, the keyword
 * stages, the neighbours of hybrid hits) each turned it off too.
 */
const JIT_OFF = 'off';

/** The session defaults of a database whose connections live across requests (Node: pg pool, PGlite). */
export const VECTOR_SESSION_SETTINGS: Readonly<Record<string, string>> = {
  'hnsw.iterative_scan': 'relaxed_order',
  random_page_cost: RANDOM_PAGE_COST,
  jit: JIT_OFF,
};
/** hnsw.ef_search as such a session leaves it (pgvector's default), enough for candidate lists this long. */
const SESSION_EF_SEARCH = 40;
const primed = new WeakSet<object>();

/** Marks `db` as one whose every connection ran VECTOR_SESSION_SQL when it connected. */
export function primeVectorSessions(db: Db) {
  primed.add(db);
}

/**
 * Whether a nearest-neighbour read of `n` rows on this storage runs as a named statement whose plan
 * the connection keeps (vectorRead's keepPlan, on a primed pool): on node-postgres and on PGlite
 * (shared/platform/data/driver/pglite-plans.ts; its tables' statistics, which nearestInTenant's choice reads, come
 * from maintenance there: shared/jobs/maintenance.ts), yes. A Worker's connection lives for one
 * request, so there nearestInTenant would only be a larger statement to plan each time (slower
 * in bench:workers); it keeps nearestMemories.
 */
export const keepsVectorPlans = (storage: StorageKind, n: number) => storage !== 'neon' && n <= SESSION_EF_SEARCH;

/** Whether every connection of `db` is ready, as its session is, for a nearest-neighbour read of `n` rows. */
export const sessionsSearch = (db: DbOrTx, n: number) => primed.has(db) && n <= SESSION_EF_SEARCH;

/**
 * The rows of a nearest-neighbour `query` of up to `n` rows. On a primed database it is the
 * statement alone (a search saves the settings and a transaction around them). Priming assumes a
 * session per connection, as the store path's named prepared statements already do (no
 * transaction-mode pooler in between). Longer lists, and every read elsewhere (a Workers request's
 * fresh connection), send the settings with it (readWithSettings: one message on Postgres).
 */
export function vectorRead<T>(db: DbOrTx, storage: StorageKind, n: number, query: SQL, opts: { keepPlan?: boolean } = {}): Promise<T[]> {
  if (sessionsSearch(db, n)) return opts.keepPlan ? preparedRows<T>(db, query) : rows<T>(db, query);
  return readWithSettings<T>(db, storage, searchSettings(n), query);
}
