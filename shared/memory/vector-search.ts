import { type SQL, sql } from 'drizzle-orm';
import { type Db, type DbOrTx, readWithSettings, rows, type StorageKind } from '../platform/db';

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
    SELECT ${select}, m.embedding <=> ${vector}::vector AS distance
    FROM memories m WHERE ${pending ? sql`m.index_pending` : sql`NOT m.index_pending`} AND ${where}
    ORDER BY distance LIMIT ${page.limit + offset})`;
  return sql`
    SELECT n.*, 1 - n.distance AS similarity FROM (${branch(false)} UNION ALL ${branch(true)}) n
    ORDER BY n.distance, n.id LIMIT ${page.limit} OFFSET ${offset}`;
}

/** The settings nearestMemories wants for `n` rows: a candidate list as long, and iterative scans (pgvector 0.8) so that filters after the index do not starve the result. */
const searchSettings = (n: number) => ({
  'hnsw.ef_search': String(Math.max(40, Math.min(n, 1000))),
  'hnsw.iterative_scan': 'relaxed_order',
  random_page_cost: RANDOM_PAGE_COST,
});

/** For nearestMemories in the caller's transaction, until it ends. One round trip. */
export async function vectorSearchSettings(tx: DbOrTx, n: number) {
  const set = Object.entries(searchSettings(n)).map(([name, value]) => sql`set_config(${name}, ${value}, true)`);
  await tx.execute(sql`SELECT ${sql.join(set, sql`, `)}`);
}

/**
 * The planner's price of a page read out of order. pgvector prices an HNSW scan by the index pages
 * it expects to visit, each at random_page_cost, and on a small graph it expects most of them: at
 * PostgreSQL's default of 4 (a spinning disk with little cache) a tenant of 400-700 memories alone in
 * its database was scanned exactly (0.6-0.9 ms) instead of through the index (0.15-0.18 ms), and so
 * was a tenant holding a seventh of the table (1.3 against 0.19 ms). 1.1 is what PostgreSQL's
 * documentation suggests for solid-state storage, and these pages are mostly cached. A small tenant
 * among many is still scanned exactly (test/vector-plan.test.ts). It is a session setting, so every
 * statement of the session plans with it.
 */
const RANDOM_PAGE_COST = '1.1';

/** The session defaults of a database whose connections live across requests (Node: pg pool, PGlite). */
export const VECTOR_SESSION_SETTINGS: Readonly<Record<string, string>> = { 'hnsw.iterative_scan': 'relaxed_order', random_page_cost: RANDOM_PAGE_COST };
/** hnsw.ef_search as such a session leaves it (pgvector's default), enough for candidate lists this long. */
const SESSION_EF_SEARCH = 40;
const primed = new WeakSet<object>();

/** Marks `db` as one whose every connection ran VECTOR_SESSION_SQL when it connected. */
export function primeVectorSessions(db: Db) {
  primed.add(db);
}

/**
 * The rows of a nearest-neighbour `query` of up to `n` rows. On a primed database it is the
 * statement alone (a search saves the settings and a transaction around them). Priming assumes a
 * session per connection, as the store path's named prepared statements already do (no
 * transaction-mode pooler in between). Longer lists, and every read elsewhere (a Workers request's
 * fresh connection), send the settings with it (readWithSettings: one message on Postgres).
 */
export function vectorRead<T>(db: DbOrTx, storage: StorageKind, n: number, query: SQL): Promise<T[]> {
  if (primed.has(db) && n <= SESSION_EF_SEARCH) return rows<T>(db, query);
  return readWithSettings<T>(db, storage, searchSettings(n), query);
}
