import { type SQL } from 'drizzle-orm';
import type { TenantScope } from '../../../shared/memory/access';
import { type DbOrTx, pgArray, readWithSettings, rows, type StorageKind, sql } from '../../../shared/platform/data/db';

/**
 * When a whole-store keyword search takes the staged path (docs/architecture.md, "Keyword search").
 * The tenant holds at least `minDocs` memories and `minShare` of the memories table (its planner
 * estimate), else its words' postings are not even counted (the count is a walk of them all). The
 * GIN index spans tenants: a stage reads every tenant's matches of the words, so with the same
 * texts in every tenant a stage cost more than the tenant's own postings for a tenant of 60,000 in
 * a table of 585,000, and less for one of 250,000 alone or in 500,000. `minPostings`: the words hold
 * that many postings in the tenant (below, reading them all costs less than a stage). `maxWords`:
 * at most that many words held by some memory (the stages' tsqueries list every subset of them).
 * `rowCost`: reading a memory row and scoring it from its tsvector costs about as much as reading
 * this many postings in key order (measured at 250,000 memories: 34 µs a row, 0.12 µs a posting).
 */
export const KEYWORD_STAGES = { minDocs: 50_000, minShare: 0.5, minPostings: 20_000, maxWords: 5, rowCost: 250 };

/** One query lexeme's postings in the tenant: how many, the largest frequency and the shortest memory. */
export interface LexemeStats {
  lexeme: string;
  df: number;
  max_tf: number;
  min_len: number;
}

/** The collection a whole-store BM25 query ranks against (memory_corpus_stats) and its query lexemes' postings. */
export interface KeywordStats {
  /** In the database's order of lexemes (statsOf). */
  lexemes: LexemeStats[];
  /** Documents in the collection: as fromPostings counts it, at least any word's df. */
  n: number;
  avgLen: number;
  parts: number;
  /**
   * The tenant's number, written into each stage as a literal: the planner then sees the tenant's
   * share of the postings. From a subquery it guessed the average tenant's (62 postings of a word
   * where the tenant of 250,000 in a table of 500,000 held 30,000) and joined a set's third word
   * by a lookup per memory instead of one pass (36 against 25 ms).
   */
  tenantNo: number;
}

export type StatsRow = {
  lexeme: string;
  df: number;
  max_tf: number;
  min_len: number;
  n: number;
  avg_len: number;
  stats_parts?: number | string;
  /** The lexeme's place in the database's order of lexemes (the postings key's), in which every path sums a memory's terms. */
  lexeme_order: number;
  /** The tenant's number, the postings key's first column. */
  tenant_no: number;
};

/**
 * The counting statement's rows (fromPostings with stages: one a query lexeme) as KeywordStats, in
 * the database's order of lexemes; words no memory holds left out.
 */
export function statsOf(counted: StatsRow[]): KeywordStats {
  const lexemes = [...counted]
    .sort((a, b) => Number(a.lexeme_order) - Number(b.lexeme_order))
    .filter((r) => Number(r.df) > 0)
    .map((r) => ({ lexeme: r.lexeme, df: Number(r.df), max_tf: Number(r.max_tf), min_len: Number(r.min_len) }));
  const first = counted[0];
  return { lexemes, n: Number(first.n), avgLen: Number(first.avg_len), parts: Number(first.stats_parts), tenantNo: Number(first.tenant_no) };
}

/**
 * BM25 parameters. k1 0.9 / b 0.4 (the Anserini defaults) over 1.2 / 0.75: on LoCoMo (7
 * conversations, offline USE) hybrid recall@10 +0.012; short memories need less length normalisation.
 */
const BM25_K1 = 0.9;
const BM25_B = 0.4;

/**
 * Okapi BM25 of one term of a document: its frequency `tf` and the document's length `len` (float8;
 * `t.tf`, `t.len` unless given), the term's document frequency `df` and collection size `n`, the
 * average length `corpus.avg_len` unless given. Every path writes the same arithmetic, so equal
 * inputs give equal scores to the last bit.
 */
export const bm25Term = (df: SQL, n: SQL, tf: SQL = sql`t.tf`, len: SQL = sql`t.len`, avgLen: SQL = sql`corpus.avg_len`) => {
  const k1 = sql.raw(String(BM25_K1));
  const b = sql.raw(String(BM25_B));
  return sql`ln(1 + (${n} - ${df} + 0.5) / (${df} + 0.5)) * ${tf} * (${k1} + 1) / (${tf} + ${k1} * (1 - ${b} + ${b} * ${len} / greatest(${avgLen}, 1)))`;
};

/** Each word's postings in the tenant. */
const dfOf = (stats: KeywordStats) => new Map(stats.lexemes.map((l) => [l.lexeme, l.df]));

const idf = (df: number, n: number) => Math.log(1 + (n - df + 0.5) / (df + 0.5));
/** A term's largest possible score: BM25 grows with tf and falls with the memory's length. */
const termBound = (l: LexemeStats, s: KeywordStats) =>
  (idf(l.df, s.n) * l.max_tf * (BM25_K1 + 1)) / (l.max_tf + BM25_K1 * (1 - BM25_B + (BM25_B * l.min_len) / Math.max(s.avgLen, 1)));

/**
 * Upper bounds of a memory's score, scaled up by a millionth so that float rounding (the SQL sums
 * in another order) never makes one a hair too small: a stop decided on them stays exact.
 * `ofWords(j)`: a memory holding at most j of the words (the j largest term bounds); `ofSet(s)`:
 * one holding exactly the words `s`.
 */
function scoreBounds(stats: KeywordStats) {
  const byWord = new Map(stats.lexemes.map((l) => [l.lexeme, termBound(l, stats)]));
  const sorted = [...byWord.values()].sort((a, b) => b - a);
  const sum = (xs: number[]) => xs.reduce((s, b) => s + b, 0) * (1 + 1e-6);
  return { ofWords: (j: number) => sum(sorted.slice(0, j)), ofSet: (set: string[]) => sum(set.map((w) => byWord.get(w) ?? 0)) };
}

/** A lexeme as a tsquery operand, taken as it is (no parser, no dictionary). */
const operand = (lexeme: string) => `'${lexeme.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;

function subsets<T>(xs: T[], k: number): T[][] {
  if (k === 0) return [[]];
  if (xs.length < k) return [];
  const [head, ...rest] = xs;
  return [...subsets(rest, k - 1).map((s) => [head, ...s]), ...subsets(rest, k)];
}

/** A tsquery matching the memories that hold all the words of one of `sets`. */
const anyOfTsquery = (sets: string[][]) => sets.map((set) => `(${set.map(operand).join(' & ')})`).join(' | ');

/**
 * Whether the memories holding all of `set` are cheaper found through the postings than through the
 * GIN index: a join of the words' postings reads them all, the GIN index reads a row for each
 * memory holding every word (estimated as if the words were independent).
 */
function byPostings(set: string[], stats: KeywordStats) {
  const df = dfOf(stats);
  const holding = set.reduce((est, w) => (est * (df.get(w) ?? 0)) / Math.max(stats.n, 1), stats.n);
  return holding * KEYWORD_STAGES.rowCost > set.reduce((sum, w) => sum + (df.get(w) ?? 0), 0);
}

/**
 * The memories holding all the words of one of `sets` (the GIN index on search_tsv), each scored
 * from its own tsvector on every query word it holds, with the numbers the postings hold (the
 * postings trigger writes tf and len the same way). Terms are summed in lexeme order, as
 * fromPostings sums them (its postings come in key order). A generated search_tsv has no weights:
 * the query's lexemes weighted A and the rest filtered out leave a memory's few query terms to
 * unnest, not its every lexeme. The tenant is a literal, so that the planner sees its share of the
 * table: from a subquery it guessed the table's average tenant, and for a tenant of 250,000 in a
 * table of 500,000 it ANDed the GIN's matches with a bitmap of the tenant's every row.
 */
function byRows(sets: string[][], list: string, tenantId: string): SQL {
  return sql`SELECT m.id, s.bm25
      FROM memories m CROSS JOIN LATERAL (
        SELECT sum(${bm25Term(sql`lex.df`, sql`corpus.n`)} ORDER BY t.lexeme) AS bm25
        FROM (
          SELECT u.lexeme, coalesce(array_length(u.positions, 1), 1)::float8 AS tf, length(m.search_tsv)::float8 AS len
          FROM unnest(ts_filter(setweight(m.search_tsv, 'A', ${list}::text[]), '{a}')) u
        ) t
        JOIN lex ON lex.lexeme = t.lexeme, corpus
      ) s
      WHERE m.search_tsv @@ ${anyOfTsquery(sets)}::tsquery AND m.tenant_id = ${tenantId}`;
}

/**
 * The memories holding all the words of `set` (in lexeme order, as the statistics list them): a
 * join of the words' postings on the memory, in key order, never a memory row. Each is scored on
 * the words of `set` alone: one holding more of the query's words was read by an earlier stage
 * with its whole score (the larger, which stagedTop keeps) or bounded out of the top n there, and
 * a smaller score of it cannot enter the top n now.
 */
function bySetPostings(set: string[], stats: KeywordStats): SQL {
  const df = dfOf(stats);
  const p = (i: number) => sql.raw(`p${i}`);
  const joins = set
    .slice(1)
    .map(
      (w, j) =>
        sql` JOIN memory_postings ${p(j + 1)} ON ${p(j + 1)}.tenant_no = p0.tenant_no AND ${p(j + 1)}.lexeme = ${w} AND ${p(j + 1)}.memory_id = p0.memory_id`,
    );
  const terms = set.map((w, i) => bm25Term(sql`${df.get(w) ?? 0}::float8`, sql`corpus.n`, sql`${p(i)}.tf::float8`, sql`${p(i)}.len::float8`));
  return sql`SELECT p0.memory_id AS id, ${sql.join(terms, sql` + `)} AS bm25
      FROM memory_postings p0${sql.join(joins, sql``)}, corpus
      WHERE p0.tenant_no = ${stats.tenantNo}::int AND p0.lexeme = ${set[0]}`;
}

/**
 * The top `n` in `scope` of the memories holding all the words of one of `sets`, each found and
 * scored the cheaper way (byPostings), with the whole store's statistics; a memory found twice
 * keeps its larger score. Memory rows are read in score order until `n` pass the scope.
 */
function stageQuery(scope: TenantScope, tenantId: string, stats: KeywordStats, sets: string[][], n: number, ranked: SQL): SQL {
  const list = pgArray(stats.lexemes.map((l) => l.lexeme));
  const viaPostings = sets.filter((set) => byPostings(set, stats));
  const viaRows = sets.filter((set) => !byPostings(set, stats));
  const branches = [...viaPostings.map((set) => bySetPostings(set, stats)), ...(viaRows.length ? [byRows(viaRows, list, tenantId)] : [])];
  return sql`WITH lex AS (
        SELECT * FROM unnest(${list}::text[], ${pgArray(stats.lexemes.map((l) => l.df))}::float8[]) AS l(lexeme, df)
      ),
      corpus AS (SELECT ${stats.n}::float8 AS n, ${stats.avgLen}::float8 AS avg_len),
      found AS (${sql.join(branches, sql` UNION ALL `)}),
      scored AS (SELECT id, max(bm25) AS bm25 FROM found GROUP BY id)
      SELECT ${ranked}, s.bm25, 1 - exp(-s.bm25 / 10) AS text_rank, ${stats.parts} AS stats_parts
      FROM (SELECT * FROM scored ORDER BY bm25 DESC, id DESC) s
      JOIN memories m ON m.id = s.id AND ${scope}
      ORDER BY s.bm25 DESC, s.id DESC LIMIT ${n}`;
}

export type StagedRow = { id: string; bm25: number };

/**
 * A stage's rows. On PostgreSQL without parallel workers: the planner would gather a join of two
 * words' postings from workers, whose start cost more than the join (measured 66 ms against 36 ms
 * for the same 600 memories on two cores). Nor compiled: with the tenant's true share of the
 * postings the estimates of a stage of common words can pass the JIT's threshold, and compiling one
 * stage cost 59 ms where its statement ran in 89.
 */
const stageRows = <T>(db: DbOrTx, storage: StorageKind, query: SQL) =>
  storage === 'embedded' ? rows<T>(db, query) : readWithSettings<T>(db, storage, { max_parallel_workers_per_gather: '0', jit: 'off' }, query);

/**
 * The top `n` of rows, each memory once with its largest score (a later stage may score it on
 * fewer words): BM25 descending, equal scores the newer (larger UUIDv7) first, as the SQL orders.
 */
function topOf<T extends StagedRow>(rows: T[], n: number): T[] {
  const byId = new Map<string, T>();
  for (const r of rows) if (!byId.has(r.id) || Number(r.bm25) > Number(byId.get(r.id)?.bm25)) byId.set(r.id, r);
  return [...byId.values()].sort((a, b) => Number(b.bm25) - Number(a.bm25) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)).slice(0, n);
}

/**
 * The exact top `n` by BM25 from the fewest memories that can hold it. Stage k reads the memories
 * holding all of some k of the q words, k = q first, and keeps the best n read so far; theta is
 * the n-th of them. A set of k words whose bound is below theta is not read: a memory holding
 * exactly those words cannot enter the top n, and one holding more was read or bounded at an
 * earlier stage. A memory not read after stage k holds at most k-1 words, so it scores at most
 * ofWords(k-1); once theta is above that, no other memory can enter the top n (ties at the n-th
 * place are among memories read). The last stage (k = 1) reads only the words whose own bound
 * reaches theta: a memory holding one other word cannot enter. Null when those are every word
 * (reading every posting is the postings query's own work); else the rows and the k they stopped at.
 */
export async function stagedTop<T extends StagedRow>(
  db: DbOrTx,
  storage: StorageKind,
  scope: TenantScope,
  tenantId: string,
  stats: KeywordStats,
  n: number,
  ranked: SQL,
): Promise<{ rows: T[]; words: number } | null> {
  const bounds = scoreBounds(stats);
  const words = stats.lexemes.map((l) => l.lexeme);
  let best: T[] = [];
  const theta = () => (best.length === n ? Number(best[n - 1].bm25) : Number.NEGATIVE_INFINITY);
  for (let k = words.length; k >= 1; k--) {
    const sets = subsets(words, k).filter((set) => bounds.ofSet(set) >= theta());
    // The last stage reads the words one alone can place in the top n (a rare word beside common
    // ones: an order number), when they are not all of them: every posting is the postings query's.
    if (k === 1 && postingsOf(sets, stats) >= postingsOf([words], stats)) return null;
    if (sets.length) best = topOf([...best, ...(await stageRows<T>(db, storage, stageQuery(scope, tenantId, stats, sets, n, ranked)))], n);
    if (k === 1 || theta() > bounds.ofWords(k - 1)) return { rows: best, words: k };
  }
  return null;
}

/** How many postings the words of `sets` hold in the tenant. */
function postingsOf(sets: string[][], stats: KeywordStats) {
  const df = dfOf(stats);
  return [...new Set(sets.flat())].reduce((sum, w) => sum + (df.get(w) ?? 0), 0);
}
