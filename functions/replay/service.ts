import type { z } from '@hono/zod-openapi';
import type { AuthContext } from '../../shared/context';
import { embedAll } from '../../shared/embeddings';
import { AppError, validationError } from '../../shared/errors';
import { toUrn } from '../../shared/memory-access';
import { analyticSettings, existedAt, statesAt } from '../../shared/memory-history';
import type { MemoryDto } from '../../shared/memory-rows';
import { vectorLiteral } from '../../shared/memory-rows';
import { recordMilestone } from '../../shared/milestones';
import type { Services } from '../../shared/services';
import { requireFeature } from '../../shared/tiers';
import * as q from './queries';
import { snapshotPage } from './snapshot';
import {
  type DiffQuery,
  KINDS_OF,
  OPERATIONS,
  parseInstant,
  PREVIEW_CHARS,
  type RecallQuery,
  type SnapshotQuery,
  type TimelineQuery,
} from './schemas';

/** Fields whose change makes a memory `modified` (diff) and that an update's `changed` lists. */
export const COMPARED_FIELDS = ['observation', 'tags', 'importance', 'context', 'agent_id', 'space_id', 'superseded_by'] as const;

export function changedFields(before: Partial<MemoryDto>, after: Partial<MemoryDto>): string[] {
  return COMPARED_FIELDS.filter((f) => JSON.stringify(before[f] ?? null) !== JSON.stringify(after[f] ?? null));
}

export const preview = (observation: string | undefined | null) => (observation == null ? null : observation.slice(0, PREVIEW_CHARS));

export const invalidRange = (start: string, end: string, relation = 'must not be after') =>
  new AppError('INVALID_RANGE', `${start} ${relation} ${end}`, { details: [{ path: start, message: `${relation} ${end}` }] });

/** Reads a validated time field against the request clock. */
export function instant(field: string, value: string, now: Date): Date {
  const parsed = parseInstant(value, now);
  if (!parsed) throw validationError(field, 'must be an ISO 8601 timestamp');
  return parsed;
}

/** A moment to look back at: replay shows the past, so a time after now is refused. */
export function pastInstant(field: string, value: string, now: Date): Date {
  const parsed = instant(field, value, now);
  if (parsed > now) throw validationError(field, 'must not be in the future');
  return parsed;
}

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

export async function timeline(services: Services, auth: AuthContext, query: z.infer<typeof TimelineQuery>) {
  requireFeature(auth.tier, 'replay');
  const now = services.clock.now();
  const since = query.since === undefined ? undefined : instant('since', query.since, now);
  const until = query.until === undefined ? undefined : instant('until', query.until, now);
  if (since && until && since > until) throw invalidRange('since', 'until');
  const kinds = (query.operations ?? OPERATIONS).flatMap((o) => KINDS_OF[o]);
  const where = q.whereTimeline(auth.tenantId, { since, until, kinds, agentId: query.agent_id });
  const { page, total, first } = await q.timelinePage(services.db, where, query.limit, query.offset);
  await recordMilestone(services.db, auth.tenantId, 'first_replay', now, { view: 'timeline' });
  return {
    entries: page.map(timelineEntry),
    total_count: total,
    has_more: query.offset + page.length < total,
    period_start: (since ?? first)?.toISOString() ?? null,
    period_end: (until ?? now).toISOString(),
    limit: query.limit,
    offset: query.offset,
  };
}

export async function snapshot(services: Services, auth: AuthContext, query: z.infer<typeof SnapshotQuery>) {
  requireFeature(auth.tier, 'replay');
  const at = pastInstant('at', query.at, services.clock.now());
  const found = await snapshotPage(services.db, auth.tenantId, at, query.limit, query.offset);
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
    limit: query.limit,
    offset: query.offset,
    has_more: query.offset + found.memories.length < found.total,
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
export async function diff(services: Services, auth: AuthContext, query: z.infer<typeof DiffQuery>) {
  requireFeature(auth.tier, 'replay');
  const now = services.clock.now();
  const from = pastInstant('from', query.from, now);
  const to = pastInstant('to', query.to, now);
  if (from >= to) throw invalidRange('from', 'to', 'must be before');
  const [before, after, ids] = await services.db.transaction(async (tx) => {
    await analyticSettings(tx);
    const changed = await q.changedBetween(tx, auth.tenantId, from, to);
    const then = await statesAt(tx, auth.tenantId, from, changed, { embeddings: false });
    const later = await statesAt(tx, auth.tenantId, to, changed, { embeddings: false });
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

const clamp01 = (x: number) => Math.min(1, Math.max(0, x));

/**
 * Counterfactual recall: the query is embedded now (outside any transaction), and the memories
 * that existed at `at` are ranked by cosine against the embedding each had then. A look at the
 * past: no recall counts, no events.
 */
export async function recall(services: Services, auth: AuthContext, query: z.infer<typeof RecallQuery>) {
  requireFeature(auth.tier, 'replay');
  const at = pastInstant('at', query.at, services.clock.now());
  const [embedding] = await embedAll(services.embedder, [query.q]);
  const hits = await services.db.transaction(async (tx) => {
    await analyticSettings(tx);
    return q.recallAt(tx, auth.tenantId, at, vectorLiteral(embedding), query.limit);
  });
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
