import type { z } from '@hono/zod-openapi';
import { activeGrants, type Grant, type GrantReader, type TenantScope } from '../../shared/memory/access';
import { isConfined } from '../../shared/platform/contract/scopes';
import { embedAll } from '../../shared/memory/embeddings';
import { seenBy } from '../../shared/memory/provenance';
import { provenanceOf } from '../../shared/memory/rows';
import { clamp01 } from '../../shared/memory/vector-search';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { oneConnectionPerRequest } from '../../shared/platform/contract/services';
import { toUrn } from '../../shared/platform/contract/ids';
import { requireFeature } from '../../shared/platform/contract/tiers';
import { DAY } from '../../shared/platform/contract/time';
import {
  candidateCount,
  fuse,
  NEIGHBOUR_GAP_MINUTES,
  NEIGHBOUR_HITS,
  NEIGHBOUR_SHARE,
  ownMatch,
  queryTexts,
  rankingVector,
  type Scored,
  semanticMatch,
  spreadToNeighbours,
} from './hybrid';
import { searchAsOf } from './as-of';
import { timesOf } from './event-time';
import * as q from './queries';
import { rerankCandidates, type SearchRun, searchRun } from './rerank';
import { withTimings } from './search-timing';
import type { SearchQuery } from './schemas';

/** A hit answered: its whole row and its score. */
interface Hit {
  row: q.Candidate;
  score: number;
}

/** similarity × (0.85 + 0.015·importance) × (1 + 0.05·ln(1 + recall_count)), in [0,1]. */
export function matchConfidence(similarity: number, importance: number, recallCount: number): number {
  return clamp01(similarity * (0.85 + 0.015 * importance) * (1 + 0.05 * Math.log1p(recallCount)));
}

/** exp(-age/30 days), the age of the memory's event time (docs/memories.md#event-time). */
function recencyOf(row: q.Ranked, now: Date) {
  const ageDays = Math.max(0, (now.getTime() - new Date(row.occurred_at ?? row.created_at).getTime()) / DAY);
  return Math.exp(-ageDays / 30);
}

/** (1-w)·relevance + w·exp(-age/30 days), in [0,1]. */
const blended = (relevance: number, row: q.Ranked, w: number, now: Date) => clamp01(w === 0 ? relevance : (1 - w) * relevance + w * recencyOf(row, now));

/**
 * Orders scored rows by score blended with recency: (1-w)·score + w·exp(-age/30 days). Rows with a
 * match of their own stay before those without (hybrid.ts).
 */
export function withRecency(scored: Scored[], w: number, now: Date) {
  return scored
    .map(({ row, score, matched }) => ({ row, matched, score: blended(score, row, w, now) }))
    .sort((a, b) => Number(b.matched) - Number(a.matched) || b.score - a.score || Number(b.row.similarity ?? 0) - Number(a.row.similarity ?? 0));
}

/**
 * A search over the tenant's own whole store takes BM25 statistics from its running totals; a
 * filtered or shared one counts them over what it searches (see queries.CorpusSource).
 */
function corpusSource(ctx: TenantCtx, grants: unknown[], query: z.infer<typeof SearchQuery>): q.CorpusSource {
  const tenantId = ctx.tenantId;
  const wholeStore = (query.scope === 'own' || !grants.length) && unfiltered(ctx, query);
  return wholeStore ? { kind: 'tenant', tenantId, storage: ctx.services.storage } : { kind: 'scope' };
}

/** Semantic: the cosine; keyword: BM25 mapped into [0,1); hybrid: see hybrid.ts. */
async function rank(
  ctx: TenantCtx,
  query: z.infer<typeof SearchQuery>,
  where: TenantScope,
  vector: string,
  semantic: q.Ranked[],
  keyword: q.Ranked[],
): Promise<Scored[]> {
  const mode = query.mode;
  if (mode === 'semantic') return semantic.map((c) => ({ row: c, score: clamp01(Number(c.similarity)), matched: true }));
  if (mode === 'keyword') return keyword.map((c) => ({ row: c, score: clamp01(Number(c.text_rank)), matched: true }));
  const fused = fuse(semantic, keyword);
  const hits = fused.slice(0, NEIGHBOUR_HITS).map((s) => s.row.id);
  if (!hits.length) return fused;
  const near = await q.neighbours(ctx.db, ctx.services.storage, where, hits, NEIGHBOUR_SHARE.length, NEIGHBOUR_GAP_MINUTES, vector, query.q);
  return spreadToNeighbours(fused, near, ownMatch(semanticMatch(semantic)));
}

/** A semantic search nothing re-ranks: its hits are its nearest rows, decided in SQL. */
const isPlainSemantic = (query: z.infer<typeof SearchQuery>, run: SearchRun) =>
  query.mode === 'semantic' && query.recency_weight === 0 && query.scope !== 'shared' && !run.reranking;

export async function search(ctx: TenantCtx, query: z.infer<typeof SearchQuery>) {
  if (query.space_id) requireFeature(ctx.tier, 'spaces');
  const run = searchRun(ctx, query);
  // The query's vector, and the one a hybrid search ranks its semantic candidates by (hybrid.ts, rankingVector).
  const vectors = run.timings.time('embed', embedAll(ctx.services.embedder, queryTexts(query.mode, query.q)));
  const embedding = vectors.then(([e]) => q.vectorLiteral(e));
  // One text embedded (every search but a hybrid one whose words differ): the ranking vector is the
  // query's own, whose text (512 numbers, some ten kilobytes) is written once.
  const ranking = vectors.then((all) => (all.length < 2 ? embedding : q.vectorLiteral(rankingVector(all))));
  // handled where they are awaited; never an unhandled rejection meanwhile
  embedding.catch(() => undefined);
  ranking.catch(() => undefined);
  const { asOf } = timesOf(query, ctx.now);
  const plain = !asOf && isPlainSemantic(query, run) && (await embedding.then((vector) => run.timings.time('db', plainSemantic(ctx, query, vector))));
  const hits = asOf
    ? await run.timings.time('db', searchAsOf(ctx, query, asOf, filtersOf(ctx, query), embedding))
    : plain || (await ranked(ctx, query, { embedding, ranking }, run));
  const answer = {
    query: query.q,
    mode: query.mode,
    rerank: run.outcome,
    total_results: hits.length,
    memories: hits.map(({ row, score }) => {
      const similarity = clamp01(Number(row.similarity));
      return {
        uuid: toUrn(row.id),
        observation: row.observation,
        score: Math.round(score * 1e6) / 1e6,
        similarity: Math.round(similarity * 1e6) / 1e6,
        match_confidence: Math.round(matchConfidence(similarity, Number(row.importance), Number(row.recall_count)) * 1e6) / 1e6,
        tags: row.tags ?? [],
        importance: Number(row.importance),
        agent_id: row.agent_id,
        space_id: row.space_id ? toUrn(row.space_id) : null,
        owner_tenant_id: row.tenant_id,
        ...provenanceOf(seenBy(ctx.tenantId, row)),
        created_at: new Date(row.created_at).toISOString(),
      };
    }),
  };
  return withTimings(answer, run.timings);
}

/**
 * Which grants the search reads: accepted shares always; the spaces that list the caller only when
 * the search names them (the shared scope or a space_id), never in a default search.
 */
const grantReader = (ctx: TenantCtx, query: z.infer<typeof SearchQuery>): GrantReader => ({
  tenantId: ctx.tenantId,
  listedSpaces: query.scope === 'shared' || !!query.space_id,
});

/** No tag, agent, space or provenance filter, nor a key confined to some: with no grants, the search reads the tenant's whole store. */
const unfiltered = (ctx: TenantCtx, query: z.infer<typeof SearchQuery>) =>
  !query.tags?.length &&
  !query.agent_id &&
  !query.space_id &&
  !query.min_trust &&
  !query.source_kind?.length &&
  !query.occurred_after &&
  !query.occurred_before &&
  !isConfined(ctx.auth.restriction);

/** The search's filters, read against the request clock. */
function filtersOf(ctx: TenantCtx, query: z.infer<typeof SearchQuery>): q.Filters {
  const { occurredAfter, occurredBefore } = timesOf(query, ctx.now);
  return {
    tags: query.tags,
    agentId: query.agent_id,
    spaceId: query.space_id,
    includeSuperseded: query.include_superseded,
    occurredAfter,
    occurredBefore,
    key: ctx.auth.restriction,
    minTrust: query.min_trust,
    sourceKinds: query.source_kind,
  };
}

/** The tenant's filters over `grants` (none: its own store). */
const readable = (ctx: TenantCtx, query: z.infer<typeof SearchQuery>, grants: Grant[]) =>
  q.whereReadable(ctx.tenantId, grants, query.scope, ctx.now, filtersOf(ctx, query));

const recallDetail = (query: z.infer<typeof SearchQuery>) => ({ query: query.q.slice(0, 200), mode: query.mode });

/**
 * Most tenants have no grants: a plain semantic search of their own store is one statement with its
 * bookkeeping (queries.plainSemanticSearch). Null when grants turned up: the caller ranks with them.
 */
async function plainSemantic(ctx: TenantCtx, query: z.infer<typeof SearchQuery>, vector: string): Promise<Hit[] | null> {
  const page = {
    limit: query.limit,
    minScore: query.min_score,
    checkGrants: query.scope === 'all' && grantReader(ctx, query),
    wholeStore: unfiltered(ctx, query),
  };
  const found = await q.plainSemanticSearch(ctx.db, ctx.services.storage, ctx.tenantId, readable(ctx, query, []), vector, page, ctx, recallDetail(query));
  if (found.grantsExist) return null;
  return found.rows.map((c) => ({ row: c, score: clamp01(Number(c.similarity)) })).filter((h) => h.score >= query.min_score);
}

/** Every other search: candidates from both lists as the mode needs, ranked, blended with recency, then recorded. */
async function ranked(
  ctx: TenantCtx,
  query: z.infer<typeof SearchQuery>,
  { embedding, ranking }: { embedding: Promise<string>; ranking: Promise<string> },
  run: SearchRun,
): Promise<Hit[]> {
  const { tenantId, now } = ctx;
  // The embedding runs beside the database work that does not need it: the keyword candidates
  // (their cosine is looked up afterwards for the few hits returned).
  const candidatesFor = async (grants: Grant[], readGrants: boolean) => {
    const where = readable(ctx, query, grants);
    // Recency blending and fusion re-rank, so fetch more than asked for; a plain semantic search does not.
    const n = query.mode === 'semantic' && query.recency_weight === 0 && !run.reranking ? query.limit : candidateCount(query.limit);
    // One list's statement reads the grants too, when asked: the keyword one, which needs no embedding.
    const grantsOf = (list: 'semantic' | 'keyword') => (readGrants && (list === 'keyword' || query.mode === 'semantic') ? grantReader(ctx, query) : null);
    const none: q.CandidateList = { rows: [] };
    const semanticList = async () => {
      if (query.mode === 'keyword') return none;
      const [vector, rankBy] = await Promise.all([embedding, ranking]);
      const wholeStoreOf = query.scope !== 'shared' && !grants.length && unfiltered(ctx, query) ? tenantId : null;
      // Ranked by `rankBy`, matched by the query's own cosine, read in the same statement when they differ.
      return q.semanticCandidates(ctx.db, ctx.services.storage, where, rankBy, n, grantsOf('semantic'), wholeStoreOf, rankBy === vector ? undefined : vector);
    };
    const keywordList = async () =>
      query.mode === 'semantic' ? none : q.keywordCandidates(ctx.db, where, query.q, n, corpusSource(ctx, grants, query), grantsOf('keyword'));
    // Side by side they would take two connections; where a request's connection is its own (a
    // Worker's), the keyword list goes first, while the embedding is computed.
    const [semantic, keyword] = oneConnectionPerRequest(ctx.services)
      ? await keywordList().then(async (k) => [await semanticList(), k] as const)
      : await Promise.all([semanticList(), keywordList()]);
    return { where, vector: await embedding, semantic: semantic.rows, keyword: keyword.rows, grants: semantic.grants ?? keyword.grants ?? [] };
  };
  // Most tenants have no grants: a search of everything readable starts with the caller's own store
  // and reads the grants in the same statement; it searches again only when grants turn up.
  let found = await run.timings.time('db', async () =>
    query.scope === 'shared' ? candidatesFor(await activeGrants(ctx.db, grantReader(ctx, query)), false) : candidatesFor([], query.scope === 'all'),
  );
  if (query.scope === 'all' && found.grants.length) found = await run.timings.time('db', candidatesFor(found.grants, false));
  const { where, vector, semantic, keyword } = found;
  if (keyword.some((c) => Number(c.stats_parts) > q.CORPUS_STATS_FOLD_AT)) await run.timings.time('db', q.foldCorpusStats(ctx.db, tenantId));
  const ordered = await run.timings.time('rank', async () => withRecency(await rank(ctx, query, where, vector, semantic, keyword), query.recency_weight, now));
  // The reranker (when on) reorders the ranked candidates; min_score and limit apply to its scores.
  const blend = (row: q.Ranked, relevance: number) => blended(relevance, row, query.recency_weight, now);
  const hits = (await rerankCandidates(ctx, query.q, run, where, ordered, blend)).filter((h) => h.score >= query.min_score).slice(0, query.limit);

  const own = hits.filter((h) => h.row.tenant_id === tenantId).map((h) => h.row.id);
  const rows = await run.timings.time(
    'db',
    q.recallAndFetch(ctx.db, tenantId, own, { scope: where, ids: hits.map((h) => h.row.id), vector }, ctx, recallDetail(query)),
  );
  return hits.flatMap(({ row, score }) => {
    const whole = rows.get(row.id);
    return whole ? [{ row: { ...whole, similarity: row.similarity ?? whole.similarity }, score }] : [];
  });
}
