import { toUrn } from '../../shared/platform/contract/ids';
import type { z } from '@hono/zod-openapi';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { embedAll } from '../../shared/memory/embeddings';
import { invalidRange } from '../../shared/platform/contract/errors';
import { analyticRead, existedAt, statesAt } from '../../shared/memory/history';
import { assertRange } from '../../shared/platform/contract/params';
import { pastPointInTime, pointInTime } from '../../shared/platform/contract/time';
import type { MemoryDto } from '../../shared/memory/rows';
import { vectorLiteral } from '../../shared/memory/rows';
import { clamp01 } from '../../shared/memory/vector-search';
import { recordMilestone } from '../../shared/platform/data/milestones';
import * as q from './queries';
import { snapshotPage } from './snapshot';
import {
  type DiffQuery,
  KINDS_OF,
  OPERATIONS,
  PREVIEW_CHARS,
  type RecallQuery,
  type SnapshotQuery,
  SnapshotPaging,
  TimelinePaging,
  type TimelineQuery,
} from './schemas';

/** Fields whose change makes a memory `modified` (diff) and that an update's `changed` lists. */
export const COMPARED_FIELDS = ['observation', 'tags', 'importance', 'context', 'agent_id', 'space_id', 'superseded_by'] as const;

export function changedFields(before: Partial<MemoryDto>, after: Partial<MemoryDto>): string[] {
  return COMPARED_FIELDS.filter((f) => JSON.stringify(before[f] ?? null) !== JSON.stringify(after[f] ?? null));
}

export const preview = (observation: string | undefined | null) => (observation == null ? null : observation.slice(0, PREVIEW_CHARS));

function timelineEntry(r: q.EventRow) {
  const state = r.after ?? r.before;
  const metadata: Record<string, unknown> = { ...(r.metadata ?? {}) };
  if (r.kind === 'expire') metadata.reason = 'expired';
  if (r.kind === 'update' && r.before && r.after && metadata.changed === undefined) metadata.changed = changedFields(r.before, r.after);
  return {
    timestamp: new Date(r.at).toISOString(),
    operation: (r.kind === 'expire' ? 'delete' : r.kind) as (typeof OPERATIONS)[number],
    memory_id: toUrn(r.memory_id),
    observation_preview: preview(state?.observation),
    agent_id: state?.agent_id ?? null,
    importance: state?.importance ?? null,
    content_hash: state?.hash ?? null,
    metadata,
  };
}

export async function timeline(ctx: TenantCtx, query: z.infer<typeof TimelineQuery>) {
  const { now, tenantId } = ctx;
  const since = query.since === undefined ? undefined : pointInTime('since', query.since, now);
  const until = query.until === undefined ? undefined : pointInTime('until', query.until, now);
  assertRange(since, until, 'since', 'until');
  const kinds = (query.operations ?? OPERATIONS).flatMap((o) => KINDS_OF[o]);
  const where = q.whereTimeline(tenantId, { since, until, kinds, agentId: query.agent_id });
  const { page, total, first } = await q.timelinePage(ctx.db, where, query.limit, query.offset);
  await recordMilestone(ctx.db, tenantId, 'first_replay', now, { view: 'timeline' });
  return {
    entries: page.map(timelineEntry),
    ...TimelinePaging.meta(total, query, page.length),
    period_start: (since ?? first)?.toISOString() ?? null,
    period_end: (until ?? now).toISOString(),
  };
}

export async function snapshot(ctx: TenantCtx, query: z.infer<typeof SnapshotQuery>) {
  const at = pastPointInTime('at', query.at, ctx.now);
  const found = await snapshotPage(ctx.db, ctx.tenantId, at, query.limit, query.offset);
  return {
    snapshot_at: at.toISOString(),
    total_memories: found.total,
    memories: found.memories.map((m) => ({
      uuid: m.uuid,
      observation: m.observation,
      context: m.context ?? null,
      agent_id: m.agent_id ?? null,
      tags: m.tags ?? [],
      importance: Number(m.importance),
      confidence: Number(m.confidence),
      created_at: m.created_at,
      space_id: m.space_id ?? null,
    })),
    edges: found.edges.map((e) => ({ ...e, weight: Number(e.weight) })),
    total_edges: found.totalEdges,
    ...SnapshotPaging.meta(found.total, query, found.memories.length),
  };
}

const diffItem = (memoryId: string, changeType: 'added' | 'removed' | 'modified', state: MemoryDto, changed?: string[]) => ({
  memory_id: toUrn(memoryId),
  change_type: changeType,
  observation_preview: preview(state.observation) ?? '',
  importance: Number(state.importance),
  ...(changed ? { changed } : {}),
});

/**
 * Only memories with a state event in (from, to], or whose TTL ran out in between, can differ;
 * their states at both ends come from the event log (statesAt), everything else is unchanged.
 */
export async function diff(ctx: TenantCtx, query: z.infer<typeof DiffQuery>) {
  const { now, tenantId } = ctx;
  const from = pastPointInTime('from', query.from, now);
  const to = pastPointInTime('to', query.to, now);
  if (from >= to) throw invalidRange('from', 'to', 'must be before');
  const [before, after, ids] = await analyticRead(ctx, async (tx) => {
    const changed = await q.changedBetween(tx, tenantId, from, to);
    const then = await statesAt(tx, tenantId, from, changed, { embeddings: false });
    const later = await statesAt(tx, tenantId, to, changed, { embeddings: false });
    return [then, later, changed] as const;
  });
  const then = new Map(before.map((s) => [s.memoryId, s.state]));
  const later = new Map(after.map((s) => [s.memoryId, s.state]));
  const added: ReturnType<typeof diffItem>[] = [];
  const removed: ReturnType<typeof diffItem>[] = [];
  const modified: ReturnType<typeof diffItem>[] = [];
  for (const id of [...ids].sort()) {
    const a = then.get(id) ?? null;
    const b = later.get(id) ?? null;
    const wasThere = existedAt(a, from);
    const isThere = existedAt(b, to);
    if (!wasThere && isThere) added.push(diffItem(id, 'added', b as MemoryDto));
    else if (wasThere && !isThere) removed.push(diffItem(id, 'removed', a as MemoryDto));
    else if (wasThere && isThere) {
      const changed = changedFields(a as MemoryDto, b as MemoryDto);
      if (changed.length) modified.push(diffItem(id, 'modified', b as MemoryDto, changed));
    }
  }
  return {
    from_timestamp: from.toISOString(),
    to_timestamp: to.toISOString(),
    added,
    removed,
    modified,
    summary: { added: added.length, removed: removed.length, modified: modified.length },
  };
}

/**
 * Counterfactual recall: the query is embedded now (outside any transaction), and the memories
 * that existed at `at` are ranked by cosine against the embedding each had then. A look at the
 * past: no recall counts, no events.
 */
export async function recall(ctx: TenantCtx, query: z.infer<typeof RecallQuery>) {
  const at = pastPointInTime('at', query.at, ctx.now);
  const [embedding] = await embedAll(ctx.services.embedder, [query.q]);
  const hits = await analyticRead(ctx, (tx) => q.recallAt(tx, ctx.tenantId, at, vectorLiteral(embedding), query.limit));
  return {
    query: query.q,
    at: at.toISOString(),
    total_results: hits.length,
    memories: hits.map((h) => {
      const similarity = Math.round(clamp01(Number(h.similarity)) * 1e6) / 1e6;
      return {
        uuid: toUrn(h.memory_id),
        observation: h.after.observation,
        similarity,
        score: similarity,
        tags: h.after.tags ?? [],
        importance: Number(h.after.importance),
        created_at: h.after.created_at,
      };
    }),
  };
}
