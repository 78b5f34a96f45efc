import { type SQL } from 'drizzle-orm';
import { sql } from '../../../shared/platform/data/db';
import { confinedTo } from '../../../shared/memory/access';
import { statesHolding } from '../../../shared/memory/edge-history';
import { embeddingOfState, eventAfter, eventTime } from '../../../shared/memory/history';
import { uuidOfUrn } from '../../../shared/memory/intervals';
import type { MemoryDto } from '../../../shared/memory/rows';
import { type DbOrTx, pgArray, rows } from '../../../shared/platform/data/db';
import { type Filters, occurredWithin } from './read';
import { bm25Term, queryLexemes, type Ranked } from './search';

/**
 * Reads of the store as it was at a past moment (`as_of` on list and search, docs/memories.md#as-of),
 * from replay's history: the memory_states intervals holding that moment (statesHolding), each
 * with the event whose `after` snapshot is the memory then and whose embedding (or the latest
 * earlier one) its vector then. The snapshots are spread into the columns of a memories row under
 * alias `m`, so the filters of a live read apply to them unchanged. Only the tenant's own store has
 * a history here; an erased memory has none (its events and states went with it).
 */
function statesAsRows(tenantId: string, at: Date): SQL {
  // Fields a create event's snapshot may leave out read as null, as a whole one holds them, but
  // its tags and times (eventTime); the whole snapshot (eventAfter) is put together for a page only.
  const after = (field: string) => sql.raw(`(e.after->>'${field}')`);
  return sql`
    SELECT p.memory_id AS id, ${tenantId}::text AS tenant_id, e.id AS event_id, e.kind, e.after, e.memory_id, e.at,
           ${after('observation')} AS observation, ${after('context')} AS context, ${after('agent_id')} AS agent_id,
           ARRAY(SELECT jsonb_array_elements_text(coalesce(e.after->'tags', '[]'::jsonb))) AS tags,
           ${uuidOfUrn(after('space_id'))} AS space_id, ${uuidOfUrn(after('superseded_by'))} AS superseded_by,
           ${eventTime('e', 'created_at')} AS created_at, ${eventTime('e', 'occurred_at')} AS occurred_at
    FROM (${statesHolding(tenantId, at)}) p JOIN memory_events e ON e.id = p.id AND e.tenant_id = ${tenantId}`;
}

/** The live read's filters over a state row (no grants, no TTL: statesHolding kept only what lived then). */
function filtersOf(f: Filters): SQL {
  const parts: SQL[] = [sql`true`];
  if (f.tags?.length) parts.push(sql`m.tags && ${pgArray(f.tags)}::text[]`);
  if (f.agentId) parts.push(sql`m.agent_id = ${f.agentId}`);
  if (f.spaceId) parts.push(sql`m.space_id = ${f.spaceId}::uuid`);
  if (f.includeSuperseded === false) parts.push(sql`m.superseded_by IS NULL`);
  parts.push(...occurredWithin(f), ...confinedTo(f.key));
  return sql.join(parts, sql` AND `);
}

/** CTE `scoped`: the states at `at` that pass the filters. */
const scopedCte = (tenantId: string, at: Date, f: Filters) =>
  sql`scoped AS MATERIALIZED (SELECT m.* FROM (${statesAsRows(tenantId, at)}) m WHERE ${filtersOf(f)})`;

/** A page of the memories of that moment, newest first (as the live list), and how many there were. */
export async function listAsOf(db: DbOrTx, tenantId: string, at: Date, f: Filters, page: { limit: number; offset: number }) {
  const [found] = await rows<{ total: number | string; page: MemoryDto[] | string | null }>(
    db,
    sql`WITH ${scopedCte(tenantId, at, f)},
        page AS (SELECT m.kind, m.after, m.memory_id, m.tenant_id, m.at, m.created_at, m.id FROM scoped m ORDER BY m.created_at DESC, m.id DESC LIMIT ${page.limit} OFFSET ${page.offset})
        SELECT (SELECT count(*) FROM scoped) AS total,
               (SELECT json_agg(${eventAfter('p')} ORDER BY p.created_at DESC, p.id DESC) FROM page p) AS page`,
  );
  const list = typeof found.page === 'string' ? (JSON.parse(found.page) as MemoryDto[]) : (found.page ?? []);
  return { total: Number(found.total), page: list };
}

/** How many memories of that moment pass the filters: an `as_of` search ranks them all, so it is capped. */
export async function countAsOf(db: DbOrTx, tenantId: string, at: Date, f: Filters): Promise<number> {
  const [found] = await rows<{ n: number | string }>(db, sql`WITH ${scopedCte(tenantId, at, f)} SELECT count(*) AS n FROM scoped`);
  return Number(found.n);
}

/** A candidate of an `as_of` search: the list's score, and the state event it ranks. */
export type PastRanked = Ranked & { event_id: string | number };

const PAST_RANKED = sql.raw(
  'm.id::text AS id, m.tenant_id, m.agent_id, m.space_id, m.created_at, coalesce(m.occurred_at, m.created_at) AS occurred_at, m.event_id',
);

/** The `n` states nearest `vector` by the cosine of the embedding each had then (exact: the set is capped). */
export function semanticAsOf(db: DbOrTx, tenantId: string, at: Date, f: Filters, vector: string, n: number) {
  return rows<PastRanked>(
    db,
    sql`WITH ${scopedCte(tenantId, at, f)}
        SELECT ${PAST_RANKED}, 1 - (${embeddingOfState('e')} <=> ${vector}::vector) AS similarity
        FROM scoped m JOIN memory_events e ON e.id = m.event_id
        ORDER BY similarity DESC NULLS LAST, m.id LIMIT ${n}`,
  );
}

/**
 * Okapi BM25 over the states' texts, as a filtered live search computes it (queries/search.ts
 * fromScope): the lexemes of observation and context as the generated column makes them, the
 * collection statistics over the states searched.
 */
export function keywordAsOf(db: DbOrTx, tenantId: string, at: Date, f: Filters, text: string, n: number) {
  return rows<PastRanked>(
    db,
    sql`WITH ${scopedCte(tenantId, at, f)},
      docs AS MATERIALIZED (
        SELECT m.id, to_tsvector('english', m.observation || ' ' || coalesce(m.context, '')) AS tsv FROM scoped m),
      lexemes AS (${queryLexemes(text)}),
      corpus AS MATERIALIZED (SELECT count(*)::float8 AS n, coalesce(avg(length(d.tsv)), 1)::float8 AS avg_len FROM docs d),
      t AS (
        SELECT d.id, length(d.tsv)::float8 AS len, u.lexeme, coalesce(array_length(u.positions, 1), 1)::float8 AS tf
        FROM docs d, unnest(d.tsv) u WHERE u.lexeme IN (SELECT lex FROM lexemes)),
      df AS (SELECT lexeme, count(*)::float8 AS df FROM t GROUP BY lexeme),
      scored AS (
        SELECT t.id, sum(${bm25Term(sql`df.df`, sql`corpus.n`)}) AS bm25 FROM t JOIN df USING (lexeme), corpus
        GROUP BY t.id ORDER BY bm25 DESC, t.id DESC LIMIT ${n})
      SELECT ${PAST_RANKED}, s.bm25, 1 - exp(-s.bm25 / 10) AS text_rank
      FROM scored s JOIN scoped m ON m.id = s.id
      ORDER BY s.bm25 DESC, s.id DESC`,
  );
}

/** The snapshots of the hits (by state event) and each one's cosine to `vector` then. */
export async function statesOf(db: DbOrTx, tenantId: string, eventIds: string[], vector: string) {
  if (!eventIds.length) return new Map<string, { after: MemoryDto; similarity: number | string | null }>();
  const found = await rows<{ id: string; after: MemoryDto; similarity: number | string | null }>(
    db,
    sql`SELECT e.id::text AS id, ${eventAfter('e')} AS after, 1 - (${embeddingOfState('e')} <=> ${vector}::vector) AS similarity
        FROM memory_events e WHERE e.tenant_id = ${tenantId} AND e.id = ANY(${pgArray(eventIds)}::bigint[])`,
  );
  return new Map(found.map((r) => [r.id, r]));
}

/**
 * The neighbours of the hits among the states of that moment, as queries/search.ts `neighbours`
 * finds them in the live store: up to `window` on each side in creation order, same agent and
 * space, at most `gapMinutes` apart, inside the filters, each with its cosine then.
 */
export function neighboursAsOf(db: DbOrTx, tenantId: string, at: Date, f: Filters, hitIds: string[], window: number, gapMinutes: number, vector: string) {
  return rows<PastRanked & { hit_id: string; distance: number }>(
    db,
    sql`WITH ${scopedCte(tenantId, at, f)},
      ordered AS MATERIALIZED (
        SELECT m.*, row_number() OVER (PARTITION BY m.agent_id, m.space_id ORDER BY m.created_at, m.id) AS rn FROM scoped m),
      hits AS (SELECT * FROM ordered WHERE id = ANY(${pgArray(hitIds)}::uuid[]))
      SELECT ${PAST_RANKED}, h.id::text AS hit_id, abs(m.rn - h.rn) AS distance, 1 - (${embeddingOfState('e')} <=> ${vector}::vector) AS similarity
      FROM hits h
      JOIN ordered m ON m.agent_id IS NOT DISTINCT FROM h.agent_id AND m.space_id IS NOT DISTINCT FROM h.space_id
        AND m.rn <> h.rn AND abs(m.rn - h.rn) <= ${window}
        AND m.created_at BETWEEN h.created_at - make_interval(mins => ${gapMinutes}) AND h.created_at + make_interval(mins => ${gapMinutes})
      JOIN memory_events e ON e.id = m.event_id`,
  );
}
