import type { z } from '@hono/zod-openapi';
import { analyticRead } from '../../shared/memory/history';
import type { MemoryDto, MemoryRow } from '../../shared/memory/rows';
import { clamp01 } from '../../shared/memory/vector-search';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { validationError } from '../../shared/platform/contract/errors';
import { requireFeature } from '../../shared/platform/contract/tiers';
import { fuse, NEIGHBOUR_GAP_MINUTES, NEIGHBOUR_HITS, NEIGHBOUR_SHARE, type Scored, semanticMatch, spreadToNeighbours } from './hybrid';
import * as q from './queries';
import type { ListQuery, SearchQuery } from './schemas';
import { withRecency } from './search';

/**
 * `as_of` reads (docs/memories.md#as-of): list and search over the store as it was at a past
 * moment, rebuilt from replay's history (queries/as-of.ts), so they follow replay's tier gate. Only
 * the caller's own memories have a history here; nothing is recorded (no recall counts, no events).
 */

/** An `as_of` search ranks every memory of that moment that passes its filters, exactly; past this many it is refused. */
export const AS_OF_MAX_MEMORIES = 10_000;

const uuidOf = (urn: string | null | undefined) => (urn ? urn.replace(/^urn:uuid:/, '') : null);

/** A snapshot as a memories row; snapshots written before provenance was recorded read as what every write was then. */
export function rowOfSnapshot(s: MemoryDto, tenantId: string): MemoryRow {
  const source = (s as Partial<MemoryDto>).source;
  return {
    id: uuidOf(s.uuid)!,
    tenant_id: tenantId,
    observation: s.observation,
    tags: s.tags ?? [],
    importance: Number(s.importance),
    confidence: Number(s.confidence ?? 1),
    recall_count: Number(s.recall_count ?? 0),
    last_recalled_at: s.last_recalled_at ?? null,
    superseded_by: uuidOf(s.superseded_by),
    context: s.context ?? null,
    agent_id: s.agent_id ?? null,
    space_id: uuidOf(s.space_id),
    content_hash: s.hash,
    expires_at: s.expires_at ?? null,
    source_kind: source?.kind ?? 'user',
    source_via: source?.via ?? 'api',
    source_key_id: source?.key_id ?? null,
    source_ref: source?.ref ?? null,
    trust: (s as Partial<MemoryDto>).trust ?? 'verified',
    occurred_at: (s as Partial<MemoryDto>).occurred_at ?? null,
    version: Number((s as { version?: number }).version ?? 1),
    created_at: s.created_at,
    updated_at: s.updated_at ?? s.created_at,
  } as MemoryRow;
}

/** Only the caller's own store has a history to read; a read of what others share is refused rather than answered empty. */
function ownOnly(ctx: TenantCtx, scope: 'all' | 'own' | 'shared') {
  requireFeature(ctx.tier, 'replay');
  if (scope === 'shared') throw validationError('as_of', 'reads your own memories as they were; scope `shared` has no history here');
}

export async function listAsOf(ctx: TenantCtx, query: z.infer<typeof ListQuery>, at: Date, filters: q.Filters) {
  ownOnly(ctx, query.scope);
  const found = await analyticRead(ctx, (tx) => q.listAsOf(tx, ctx.tenantId, at, filters, query));
  return { memories: found.page.map((s) => q.toMemoryDto(rowOfSnapshot(s, ctx.tenantId))), total: found.total };
}

/**
 * The search's modes over the states of that moment: the same candidate lists (cosine against the
 * embedding each state had, BM25 over the states' texts), the same fusion and neighbour shares, and
 * recency counted back from `at`. Hits come back as rows of their snapshots.
 */
export async function searchAsOf(ctx: TenantCtx, query: z.infer<typeof SearchQuery>, at: Date, filters: q.Filters, embedding: Promise<string>) {
  ownOnly(ctx, query.scope);
  const vector = await embedding;
  const { tenantId } = ctx;
  return analyticRead(ctx, async (tx) => {
    const count = await q.countAsOf(tx, tenantId, at, filters);
    if (count > AS_OF_MAX_MEMORIES)
      throw validationError(
        'as_of',
        `an as_of search ranks at most ${AS_OF_MAX_MEMORIES} memories and ${count} match: narrow it with tags, agent_id, space_id or occurred_after/occurred_before`,
      );
    const n = Math.min(Math.max(query.limit * 4, 40), 400);
    const semantic = query.mode === 'keyword' ? [] : await q.semanticAsOf(tx, tenantId, at, filters, vector, n);
    const keyword = query.mode === 'semantic' ? [] : await q.keywordAsOf(tx, tenantId, at, filters, query.q, n);
    let scored: Scored[];
    if (query.mode === 'semantic') scored = semantic.map((c) => ({ row: c, score: clamp01(Number(c.similarity)), matched: true }));
    else if (query.mode === 'keyword') scored = keyword.map((c) => ({ row: c, score: clamp01(Number(c.text_rank)), matched: true }));
    else {
      const fused = fuse(semantic, keyword);
      const hits = fused.slice(0, NEIGHBOUR_HITS).map((s) => s.row.id);
      const near = hits.length ? await q.neighboursAsOf(tx, tenantId, at, filters, hits, NEIGHBOUR_SHARE.length, NEIGHBOUR_GAP_MINUTES, vector) : [];
      scored = hits.length ? spreadToNeighbours(fused, near, semanticMatch(semantic)) : fused;
    }
    const hits = withRecency(scored, query.recency_weight, at)
      .filter((h) => h.score >= query.min_score)
      .slice(0, query.limit);
    const states = await q.statesOf(
      tx,
      tenantId,
      hits.map((h) => String((h.row as q.PastRanked).event_id)),
      vector,
    );
    return hits.flatMap(({ row, score }) => {
      const state = states.get(String((row as q.PastRanked).event_id));
      return state ? [{ row: { ...rowOfSnapshot(state.after, tenantId), similarity: Number(state.similarity ?? 0) }, score }] : [];
    });
  });
}
