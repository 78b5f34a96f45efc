import { type SQL } from 'drizzle-orm';
import { sql } from '../../../shared/platform/data/db';
import { type Grant, type GrantReader, grantsFromJson, grantsJson, type TenantScope } from '../../../shared/memory/access';
import type { HitRow, MemoryRow } from '../../../shared/memory/rows';
import { bm25Term, KEYWORD_STAGES, type StagedRow, type StatsRow, stagedTop, statsOf } from './keyword-stages';
import { keepsVectorPlans, nearestInTenant, nearestMemories, vectorRead } from '../../../shared/memory/vector-search';
import { type DbOrTx, pgArray, preparedRows, readWithSettings, rows, type StorageKind } from '../../../shared/platform/data/db';

/** A hit as a search answers it (HIT_COLUMNS) with its scores. */
type Candidate = HitRow & { similarity?: number; text_rank?: number; bm25?: number; stats_parts?: number | string };
export type { Candidate };

/**
 * A candidate of a ranked search: what ranking needs (identity, owner, agent, space, age) and its
 * list's score. The few hits answered are read whole afterwards (recallAndFetch), so the lists and
 * the neighbour walk (160 rows or so for a hybrid search) carry no text, tags or counts.
 */
export type Ranked = Pick<MemoryRow, 'id' | 'tenant_id' | 'agent_id' | 'space_id' | 'created_at'> & {
  /** Its event time (`created_at` when unset), which recency weighting reads. */
  occurred_at?: Date | string;
  similarity?: number;
  /** A semantic candidate's cosine to the vector that ranked it, where that is not the query's own (hybrid.ts, rankingVector). */
  rank_similarity?: number;
  text_rank?: number;
  bm25?: number;
  stats_parts?: number | string;
};
const RANKED = sql.raw('m.id, m.tenant_id, m.agent_id, m.space_id, m.created_at, coalesce(m.occurred_at, m.created_at) AS occurred_at');

/** Candidates of one list, and the caller's grants when asked for (see withGrants). */
export interface CandidateList {
  rows: Ranked[];
  grants?: Grant[];
  /** A whole-store keyword list found by the stages: the fewest query words its memories held (keyword-stages.ts). */
  stagedWords?: number;
}

/**
 * `found` (a candidate query) with the caller's grants read in the same statement: one row more
 * (nulls) when nothing was found, so the grants always come back. A search over everything the
 * caller may read starts with its own store and learns in the same round trip whether it has
 * grants at all (most tenants have none).
 */
function withGrants(reader: GrantReader | null, found: SQL, order: SQL): SQL {
  if (!reader) return found;
  return sql`WITH grants AS (SELECT ${grantsJson(reader)} AS list), found AS (${found})
             SELECT g.list AS grants_json, f.* FROM grants g LEFT JOIN found f ON true ORDER BY ${order}`;
}

/** `nearest`'s rows with their cosine to `vector` as `similarity`, the one they were ranked by as `rank_similarity`. */
const withMatchCosine = (nearest: SQL, vector: string) =>
  sql`SELECT n.id, n.tenant_id, n.agent_id, n.space_id, n.created_at, n.occurred_at, n.distance, n.similarity AS rank_similarity,
        1 - (m.embedding <=> ${vector}::vector) AS similarity
      FROM (${nearest}) n JOIN memories m ON m.id = n.id AND m.tenant_id = n.tenant_id ORDER BY n.distance, n.id`;

function listOf(found: (Ranked & { grants_json?: unknown })[], withGrantsOf: GrantReader | null): CandidateList {
  if (!withGrantsOf) return { rows: found };
  return { rows: found.filter((r) => r.id !== null), grants: grantsFromJson(found[0].grants_json) };
}

/**
 * Nearest neighbours by cosine. The HNSW index serves the ORDER BY; iterative scans (pgvector 0.8)
 * keep reading the index until enough rows pass the tenant and tag filters. `grantsOf`: read that
 * tenant's grants in the same statement. `wholeStoreOf`: `scope` is that tenant's whole store (no
 * filter, no grants), searched where plans are kept by a statement that keeps its plan (nearestInTenant).
 * `matchVector`: `vector` only ranks; each row's `similarity` is its cosine to `matchVector`, read in
 * the same statement, and `rank_similarity` its cosine to `vector`.
 */
export async function semanticCandidates(
  db: DbOrTx,
  storage: StorageKind,
  scope: TenantScope,
  vector: string,
  n: number,
  grantsOf: GrantReader | null = null,
  wholeStoreOf: string | null = null,
  matchVector?: string,
): Promise<CandidateList> {
  const keepPlan = wholeStoreOf !== null && keepsVectorPlans(storage, n);
  const nearest = keepPlan ? nearestInTenant(RANKED, scope, vector, { limit: n }, wholeStoreOf) : nearestMemories(RANKED, scope, vector, { limit: n });
  const query = withGrants(grantsOf, matchVector ? withMatchCosine(nearest, matchVector) : nearest, sql`f.distance, f.id`);
  return listOf(await vectorRead<Ranked>(db, storage, n, query, { keepPlan }), grantsOf);
}

/**
 * Where a BM25 query's postings and collection statistics come from. `tenant`: a search over the
 * tenant's own whole store reads the postings of its words (memory_postings) and the running totals
 * (memory_corpus_stats), both kept by triggers in the writing transaction: no memory row is touched
 * until the winners are fetched. `scope`: a filtered or shared search counts over the rows it
 * searches (GIN index on search_tsv), whose collection is what the filter leaves (inverse document
 * frequencies relative to it rank better: a tag-filtered LoCoMo search with whole-store statistics
 * lost 0.02-0.04 recall@10).
 */
export type CorpusSource = { kind: 'tenant'; tenantId: string; storage?: StorageKind } | { kind: 'scope' };

export { bm25Term };

export const queryLexemes = (text: string) => sql`SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('english', ${text}))) AS lex`;

/** A tsquery matching any of the query's lexemes (null when it has none). */
const queryTsquery = (text: string) => sql`SELECT to_tsquery('simple', string_agg(quote_literal(lex), ' | ')) FROM (${queryLexemes(text)}) l`;

/**
 * Full-text candidates ranked by Okapi BM25 over the stemmed lexemes of the generated tsvector.
 * Any query word may match. Postgres' ts_rank has no inverse document frequency, which costs a lot
 * of recall on chat-like data. `bm25` is the raw score; `text_rank` maps it into [0,1) by
 * 1 - exp(-bm25 / 10). No cosine: the query's embedding may not exist yet (see recallAndSimilarities).
 * Equal scores: the newer memory first (ids are UUIDv7).
 */
export async function keywordCandidates(
  db: DbOrTx,
  scope: TenantScope,
  text: string,
  n: number,
  source: CorpusSource = { kind: 'scope' },
  grantsOf: GrantReader | null = null,
): Promise<CandidateList> {
  if (source.kind === 'scope') return listOf(await rows<Ranked>(db, withGrants(grantsOf, fromScope(scope, text, n), KEYWORD_ORDER)), grantsOf);
  // Over the whole store every step is an index lookup whatever the tenant or the words, so the
  // statements keep their plans (prepared once per connection; planning cost more than running).
  // The first answers outright when the words' postings are few; else it only counts them, and
  // the stages find the top n among the memories holding most of the words (keyword-stages.ts).
  const first = await preparedRows<Ranked & StatsRow>(db, withGrants(grantsOf, fromPostings(scope, text, n, source.tenantId, KEYWORD_STAGES), KEYWORD_ORDER));
  const { rows: found, grants } = listOf(first, grantsOf);
  const counted = first.filter((r) => r.lexeme != null);
  if (!counted.length) return { rows: found, grants };
  const top = await stagedTop<Ranked & StagedRow>(db, source.storage ?? 'embedded', scope, source.tenantId, statsOf(counted), n, RANKED);
  if (top) return { rows: top.rows, grants, stagedWords: top.words };
  return { rows: await keywordByPostings(db, scope, text, n, source.tenantId), grants };
}

/** The whole-store top `n` from every posting of the query's words: the stages' last resort, and what they must equal. */
export const keywordByPostings = (db: DbOrTx, scope: TenantScope, text: string, n: number, tenantId: string) =>
  preparedRows<Ranked>(db, fromPostings(scope, text, n, tenantId));

/**
 * Whole store: the words' postings (one index range each), document frequencies over them, the
 * scores, then memory rows in score order until `n` pass the scope (superseded and expired ones
 * hold postings too and are skipped here). With `stages`, a big tenant's words are first counted
 * (kept statistics and the postings stored since they were folded, migrations/0058), and their
 * postings read only when the staged path does not apply (KEYWORD_STAGES); else the answer is one
 * row a word with its counts and the corpus figures.
 */
const KEYWORD_ORDER = sql`f.bm25 DESC, f.id DESC`;

function fromPostings(scope: TenantScope, text: string, n: number, tenantId: string, stages?: typeof KEYWORD_STAGES): SQL {
  const tenantNo = sql`(SELECT tenant_no FROM tenants WHERE id = ${tenantId})`;
  const counts = stages
    ? sql`big AS MATERIALIZED (
        SELECT coalesce(sum(s.docs), 0) >= greatest(${stages.minDocs}::float8, ${stages.minShare}::float8 * (SELECT reltuples FROM pg_class WHERE oid = 'memories'::regclass)) AS yes
        FROM memory_corpus_stats s WHERE s.tenant_id = ${tenantId}
      ),
      -- The words as an array, as t reads them: planned the same whatever the query's text, so the
      -- statement keeps its generic plan (per word, a plan made for the text's own words looked
      -- cheaper and the statement was planned again at every run).
      -- Each word's statistics up to the tenant's mark, kept per lexeme, and its postings after the
      -- mark counted (migrations/0058): what counting every posting of the word gives.
      mark AS MATERIALIZED (
        SELECT coalesce((SELECT f.through FROM memory_lexeme_folds f WHERE f.tenant_no = ${tenantNo}), '00000000-0000-0000-0000-000000000000'::uuid) AS through
      ),
      counts AS MATERIALIZED (
        SELECT l.lex AS lexeme, coalesce(s.df, 0) + r.df AS df, greatest(s.max_tf, r.max_tf)::float8 AS max_tf, least(s.min_len, r.min_len)::float8 AS min_len
        FROM lexemes l
        LEFT JOIN memory_lexeme_stats s ON s.tenant_no = ${tenantNo} AND s.lexeme = l.lex
        CROSS JOIN LATERAL (
          SELECT count(*)::float8 AS df, max(p.tf)::float8 AS max_tf, min(p.len)::float8 AS min_len FROM memory_postings p
          WHERE p.tenant_no = ${tenantNo} AND p.lexeme = l.lex AND p.memory_id > (SELECT through FROM mark)
        ) r
        WHERE (SELECT yes FROM big)
      ),
      staged AS MATERIALIZED (
        SELECT count(*) FILTER (WHERE df > 0) BETWEEN 2 AND ${stages.maxWords} AND coalesce(sum(df), 0) >= ${stages.minPostings} AS yes FROM counts
      ),`
    : sql``;
  // float8 throughout: sums of bigints are numeric, and numeric arithmetic over thousands of
  // postings costs more than reading them.
  const found = sql`WITH lexemes AS (${queryLexemes(text)}), ${counts}
      t AS MATERIALIZED (
        SELECT p.lexeme, p.memory_id, p.tf::float8 AS tf, p.len::float8 AS len FROM memory_postings p
        WHERE ${stages ? sql`NOT (SELECT yes FROM staged) AND` : sql``} p.tenant_no = ${tenantNo} AND p.lexeme = ANY (ARRAY(SELECT lex FROM lexemes))
      ),
      -- Counted over t as without stages, not taken from counts: a plan that sums a memory's terms
      -- in another order can differ in the last bit, and the scores are those of the other paths.
      df AS (SELECT lexeme, count(*)::float8 AS df FROM t GROUP BY lexeme),
      corpus AS MATERIALIZED (
        SELECT greatest(sum(s.docs)::float8, (SELECT max(df) FROM df), 0) AS n,
               coalesce(sum(s.lexemes)::float8 / nullif(sum(s.docs), 0), 1) AS avg_len, count(*) AS parts
        FROM memory_corpus_stats s WHERE s.tenant_id = ${tenantId}
      ),
      scored AS (
        SELECT t.memory_id AS id, sum(${bm25Term(sql`df.df`, sql`corpus.n`)}) AS bm25 FROM t JOIN df USING (lexeme), corpus GROUP BY t.memory_id
      ),
      hits AS (
        SELECT ${RANKED}, s.bm25, 1 - exp(-s.bm25 / 10) AS text_rank, (SELECT parts FROM corpus) AS stats_parts
        FROM (SELECT * FROM scored ORDER BY bm25 DESC, id DESC) s
        JOIN memories m ON m.id = s.id AND ${scope}
        ORDER BY s.bm25 DESC, s.id DESC LIMIT ${n}
      )`;
  if (!stages) return sql`${found} SELECT * FROM hits`;
  return sql`${found}
    SELECT h.*, NULL::text AS lexeme, NULL::float8 AS df, NULL::float8 AS max_tf, NULL::float8 AS min_len, NULL::float8 AS n, NULL::float8 AS avg_len,
      NULL::int AS lexeme_order, NULL::int AS tenant_no FROM hits h
    UNION ALL
    SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, c.parts, w.lexeme, w.df, w.max_tf, w.min_len, greatest(c.n, (SELECT max(df) FROM counts)), c.avg_len,
      (row_number() OVER (ORDER BY w.lexeme))::int, ${tenantNo}
    FROM counts w, corpus c WHERE (SELECT yes FROM staged)`;
}

/**
 * Filtered or shared: the GIN index finds the matching rows; statistics are counted over the scope.
 * The query's tsquery and the scope's statistics are computed once whatever the join order (an
 * InitPlan, a materialized CTE): for a tenant estimated at a row, the planner once computed the
 * tsquery again for every row it scanned.
 */
function fromScope(scope: TenantScope, text: string, n: number): SQL {
  return sql`WITH lexemes AS (${queryLexemes(text)}),
      query AS (SELECT to_tsquery('simple', string_agg(quote_literal(lex), ' | ')) AS tsq FROM lexemes),
      matched AS (
        SELECT m.id, m.search_tsv, length(m.search_tsv) AS len FROM memories m
        WHERE m.search_tsv @@ (SELECT tsq FROM query) AND ${scope}
      ),
      corpus AS MATERIALIZED (
        SELECT greatest(c.n, (SELECT count(*) FROM matched))::float8 AS n, coalesce(c.avg_len, 1)::float8 AS avg_len, 0 AS parts
        FROM (SELECT count(*) AS n, avg(length(m.search_tsv)) AS avg_len FROM memories m WHERE ${scope}) c
      ),
      t AS (
        SELECT d.id, d.len::float8 AS len, u.lexeme, coalesce(array_length(u.positions, 1), 1)::float8 AS tf
        FROM matched d, unnest(d.search_tsv) u WHERE u.lexeme IN (SELECT lex FROM lexemes)
      ),
      -- Counted over t as without stages, not taken from counts: a plan that sums a memory's terms
      -- in another order can differ in the last bit, and the scores are those of the other paths.
      df AS (SELECT lexeme, count(*)::float8 AS df FROM t GROUP BY lexeme),
      scored AS (
        SELECT t.id, sum(${bm25Term(sql`df.df`, sql`corpus.n`)}) AS bm25 FROM t JOIN df USING (lexeme), corpus
        GROUP BY t.id ORDER BY bm25 DESC, t.id DESC LIMIT ${n}
      )
      SELECT ${RANKED}, s.bm25, 1 - exp(-s.bm25 / 10) AS text_rank, 0 AS stats_parts
      FROM scored s JOIN memories m ON m.id = s.id
      ORDER BY s.bm25 DESC, s.id DESC LIMIT ${n}`;
}

/** How many delta rows of a tenant's corpus statistics a search tolerates before folding them. */
export const CORPUS_STATS_FOLD_AT = 64;

/**
 * Folds a tenant's corpus-statistics deltas into one row. Concurrent folds each delete a disjoint
 * set of rows (a deleted row is skipped by the other) and insert its sum; writes that commit
 * meanwhile add rows this fold did not see. Either way the sums stay exact.
 */
export async function foldCorpusStats(db: DbOrTx, tenantId: string) {
  await db.execute(sql`
    WITH gone AS (DELETE FROM memory_corpus_stats WHERE tenant_id = ${tenantId} RETURNING docs, lexemes)
    INSERT INTO memory_corpus_stats (tenant_id, docs, lexemes)
    SELECT ${tenantId}, sum(docs), sum(lexemes) FROM gone HAVING count(*) > 0`);
}

/**
 * The tenants whose corpus statistics hold more than `atLeast` delta rows, the most first, at most
 * `limit` of them: the periodic maintenance folds these, so a tenant that never searches by keyword
 * does not keep a row per write for ever. A system query across tenants (its caller folds each one
 * with `foldCorpusStats`, which takes the tenant); it reads the statistics' tenant index only.
 */
export async function corpusStatsToFold(db: DbOrTx, atLeast: number, limit: number) {
  const due = await rows<{ tenant_id: string }>(
    db,
    sql`SELECT tenant_id FROM memory_corpus_stats GROUP BY tenant_id HAVING count(*) > ${atLeast}
        ORDER BY count(*) DESC, tenant_id LIMIT ${limit}`,
  );
  return due.map((r) => r.tenant_id);
}

/**
 * Up to `window` memories on each side of every hit in the order they were stored: same owner,
 * agent and space, at most `gapMinutes` apart, inside `scope` (so a filter still holds). A memory
 * stored next to a strong hit is often the rest of the same exchange (a question and its answer, a
 * plan and its outcome). `distance` is 1 for the adjacent memory. With `vector`, each carries its
 * cosine to it (`similarity`), and with `text`, whether any of the query's words is in it (`word_match`):
 * whether a neighbour matches the query by itself is judged on its own words and cosine, which a
 * neighbour outside the candidate lists has no other way to show (hybrid.ts).
 */
export function neighbours(
  db: DbOrTx,
  storage: StorageKind,
  scope: TenantScope,
  hitIds: string[],
  window: number,
  gapMinutes: number,
  vector?: string,
  text?: string,
) {
  const cosine = vector ? sql`, 1 - (m.embedding <=> ${vector}::live_vector) AS similarity` : sql``;
  const words = text ? sql`, coalesce(m.search_tsv @@ (${queryTsquery(text)}), false) AS word_match` : sql``;
  const side = (before: boolean) => {
    const order = before ? sql`m.created_at DESC, m.id DESC` : sql`m.created_at, m.id`;
    const near = before
      ? sql`(m.created_at, m.id) < (h.created_at, h.id) AND m.created_at >= h.created_at - make_interval(mins => ${gapMinutes})`
      : sql`(m.created_at, m.id) > (h.created_at, h.id) AND m.created_at <= h.created_at + make_interval(mins => ${gapMinutes})`;
    return sql`(
      SELECT ${RANKED}${cosine}${words}, row_number() OVER (ORDER BY ${order}) AS distance FROM memories m
      WHERE ${scope} AND m.tenant_id = h.tenant_id AND m.agent_id IS NOT DISTINCT FROM h.agent_id
        AND m.space_id IS NOT DISTINCT FROM h.space_id AND ${near}
      ORDER BY ${order} LIMIT ${window})`;
  };
  // Each side is a walk along memories_tenant_created_idx that stops after `window` rows. The planner
  // cannot know the filters keep most rows, so it would rather fetch the whole gap with a bitmap scan
  // and sort it (far slower on a large store), and the cost it then estimates would have Postgres
  // JIT-compile the query, which costs much more than running it. The read is told not to do either.
  return readWithSettings<Ranked & { hit_id: string; distance: number }>(
    db,
    storage,
    { enable_bitmapscan: 'off', enable_seqscan: 'off', jit: 'off' },
    sql`SELECT n.*, h.id AS hit_id
        FROM memories h CROSS JOIN LATERAL (${side(true)} UNION ALL ${side(false)}) n
        WHERE h.id = ANY(${pgArray(hitIds)}::uuid[])`,
  );
}
