import type { z } from '@hono/zod-openapi';
import { sql } from '../../shared/platform/data/db';
import { activeGrants, type Scope } from '../../shared/memory/access';
import { embedAll } from '../../shared/memory/embeddings';
import { minTrust, seenBy, sourceFor, trustOf, type Trust } from '../../shared/memory/provenance';
import { occurredAtOf } from '../../shared/memory/event-time';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { digestOf } from '../../shared/platform/contract/crypto';
import { pgArray } from '../../shared/platform/data/db';
import { AppError, conflict, notFound, validationError } from '../../shared/platform/contract/errors';
import { blocked, memoryJudge } from './store/govern';
import { toUrn } from '../../shared/platform/contract/ids';
import { requireFeature } from '../../shared/platform/contract/tiers';
import { DAY } from '../../shared/platform/contract/time';
import { write } from '../../shared/platform/data/unit-of-work';
import { adjustLiveMemories } from '../../shared/platform/data/usage';
import { listAsOf } from './as-of';
import { timesOf } from './event-time';
import * as q from './queries';
import { type ContextNowQuery, type ListQuery, ListPaging, type PatchBody } from './schemas';

/**
 * The caller's readable scope: its own memories and, unless `own`, what accepted shares expose; the
 * spaces that list the caller count only when the read names them (`named`: the shared scope, a
 * space_id or the memory's id), never in a default read.
 */
async function readable(ctx: TenantCtx, scope: Scope, filters: q.Filters, named = scope === 'shared' || !!filters.spaceId) {
  const grants = scope === 'own' ? [] : await activeGrants(ctx.db, { tenantId: ctx.tenantId, listedSpaces: named });
  return q.whereReadable(ctx.tenantId, grants, scope, ctx.now, { ...filters, key: ctx.auth.restriction });
}

export async function list(ctx: TenantCtx, query: z.infer<typeof ListQuery>) {
  if (query.space_id) requireFeature(ctx.tier, 'spaces');
  const { occurredAfter, occurredBefore, asOf } = timesOf(query, ctx.now);
  const filters = {
    tags: query.tags,
    agentId: query.agent_id,
    spaceId: query.space_id,
    minTrust: query.min_trust,
    sourceKinds: query.source_kind,
    occurredAfter,
    occurredBefore,
  };
  if (asOf) {
    const past = await listAsOf(ctx, query, asOf, { ...filters, key: ctx.auth.restriction });
    return { memories: past.memories, ...ListPaging.meta(past.total, query, past.memories.length) };
  }
  const where = await readable(ctx, query.scope, filters);
  const { page, total } = await q.listPage(ctx.db, where, query);
  return { memories: page.map((r) => q.toMemoryDto(seenBy(ctx.tenantId, r))), ...ListPaging.meta(total, query, page.length) };
}

export async function get(ctx: TenantCtx, input: { id: string }) {
  // Naming the memory counts the spaces that list the caller (GrantReader); the grants are read in
  // the row's own statement, so a keyed read is one round trip.
  const where = q.whereReadable(ctx.tenantId, { listedSpaces: true }, 'all', ctx.now, { key: ctx.auth.restriction });
  const row = await q.findIn(ctx.db, where, input.id);
  if (!row) throw notFound('Memory');
  return q.toMemoryDto(seenBy(ctx.tenantId, row));
}

/** The SET list of a patch; the new embedding and hash when the observation changed. */
function patchSets(body: z.infer<typeof PatchBody>, change: { embedding: number[] | null; hash: string; trust: Trust | null }, now: Date) {
  const sets = [sql`version = m.version + 1`, sql`updated_at = ${now.toISOString()}`];
  if (change.trust) sets.push(sql`trust = ${change.trust}`);
  if (change.embedding)
    sets.push(sql`observation = ${body.observation!}`, sql`content_hash = ${change.hash}`, sql`embedding = ${q.vectorLiteral(change.embedding)}::live_vector`);
  if (body.importance !== undefined) sets.push(sql`importance = ${body.importance}`);
  if (body.tags !== undefined) sets.push(sql`tags = ${pgArray(body.tags)}::text[]`);
  if (body.superseded_by !== undefined) sets.push(sql`superseded_by = ${body.superseded_by}::uuid`);
  if (body.occurred_at !== undefined) sets.push(sql`occurred_at = ${occurredAtOf(body.occurred_at, now)?.toISOString() ?? null}::timestamptz`);
  return sets;
}

/**
 * Patch with optimistic concurrency: the new embedding is computed outside the transaction from the
 * version read first; the update applies only if that version is still current, so of two
 * concurrent patches one wins and the other gets 409 CONFLICT, and no change is silently lost.
 */
export async function patch(ctx: TenantCtx, input: { id: string } & z.infer<typeof PatchBody>) {
  const { id, ...body } = input;
  const { tenantId, now } = ctx;
  const key = ctx.auth.restriction;
  const current = await q.findOwn(ctx.db, tenantId, id, now, false, key);
  if (!current) throw notFound('Memory');
  if (body.superseded_by === id) throw validationError('superseded_by', 'a memory cannot supersede itself');
  if (body.superseded_by && !(await q.findOwn(ctx.db, tenantId, body.superseded_by, now, false, key))) throw validationError('superseded_by', 'no such memory');
  const observationChanged = body.observation !== undefined && body.observation !== current.observation;
  if (observationChanged || body.tags !== undefined) await governUpdate(ctx, current, body);
  const embedding = observationChanged ? (await embedAll(ctx.services.embedder, [body.observation!]))[0] : null;
  const hash = observationChanged ? await digestOf(ctx.services)(body.observation!) : current.content_hash;
  // New text is its writer's: an agent key's edit of a verified memory leaves it trusted as an agent's
  // (docs/memories.md#provenance-and-trust); the update event records before and after.
  const editorTrust = observationChanged ? minTrust(current.trust, trustOf(sourceFor(ctx, undefined, current.agent_id).kind)) : current.trust;
  const trust = editorTrust !== current.trust ? editorTrust : null;

  const updated = await write(ctx, async (work) => {
    const row = await q.updateIfVersion(work.tx, tenantId, id, current.version, patchSets(body, { embedding, hash, trust }, now));
    if (!row) throw conflict('The memory was changed by another request; read it again and retry');
    const [before, after] = [q.toMemoryDto(current), q.toMemoryDto(row)];
    // The row already holds the state's vector: the event points at it (migrations/0045).
    await work.memoryEvents([{ memoryId: id, kind: 'update', before, after, embeddingLive: true }]);
    const changed = Object.keys(body).filter((k) => body[k as keyof typeof body] !== undefined);
    await work.audit({
      operation: 'memory.update',
      resourceType: 'memory',
      resourceId: after.uuid,
      metadata: { changed, hash: after.hash, agent_id: after.agent_id },
    });
    await work.event('memory.updated', { memory: after, changed });
    return after;
  });
  return { uuid: updated.uuid, observation: updated.observation, updated_at: updated.updated_at, memory: updated };
}

/**
 * A change of the text or tags meets the memory policies as a store does (docs/governed-memories.md),
 * with the memory's own source: `block` refuses it (403 BLOCKED). An update is never held: a change
 * a rule would hold is refused (403 FORBIDDEN with the policy result), to be written as a new memory,
 * which is held for review, so a held change never sits beside the memory it would replace.
 */
async function governUpdate(ctx: TenantCtx, current: q.MemoryRow, body: { observation?: string; tags?: string[] }) {
  const verdict = await memoryJudge(ctx)({
    observation: body.observation ?? current.observation,
    tags: body.tags ?? current.tags,
    source: { kind: current.source_kind, via: current.source_via, ref: current.source_ref },
    agentId: current.agent_id,
  });
  if (verdict?.enforced === 'blocked') throw blocked(verdict.policyResult);
  if (verdict?.enforced === 'pending_review') {
    const by = `${verdict.policyResult.triggered_policy ?? 'a policy'}${verdict.policyResult.reason ? `: ${verdict.policyResult.reason}` : ''}`;
    throw new AppError(
      'FORBIDDEN',
      `A memory policy would hold this change for review (${by}); an update is never held: store the new text as a new memory (POST /v1/memories), which is held for review, and delete this one once it is approved`,
      { policy_result: verdict.policyResult },
    );
  }
}

/** Permanent delete; links go with it (the event keeps the last state and its links for replay). */
export async function remove(ctx: TenantCtx, input: { id: string }) {
  const { id } = input;
  const { tenantId, now } = ctx;
  await write(ctx, async (work) => {
    const row = await q.findOwn(work.tx, tenantId, id, now, true, ctx.auth.restriction);
    if (!row) throw notFound('Memory');
    const links = await q.linksOf(work.tx, tenantId, id);
    const embedding = await q.embeddingOf(work.tx, tenantId, id);
    await q.deleteMemory(work.tx, tenantId, id);
    // Memories it superseded are current again; each change is an event of its own.
    const revived = await q.reviveSupersededBy(work.tx, tenantId, id, now);
    const before = q.toMemoryDto(row);
    const linkRecords = links.map((l) => ({ source_id: toUrn(l.source_id), target_id: toUrn(l.target_id), relation: l.relation, weight: Number(l.weight) }));
    await work.memoryEvents([
      ...revived.map((r) => {
        const after = q.toMemoryDto(r);
        return {
          memoryId: r.id,
          kind: 'update' as const,
          before: { ...after, superseded_by: before.uuid },
          after,
          metadata: { reason: 'superseding memory deleted' },
        };
      }),
      { memoryId: id, kind: 'delete', before, embedding, metadata: { links: linkRecords } },
    ]);
    await work.audit({
      operation: 'memory.delete',
      resourceType: 'memory',
      resourceId: before.uuid,
      metadata: { hash: before.hash, agent_id: before.agent_id, links_removed: links.length },
    });
    await work.event('memory.deleted', { memory_id: before.uuid, memory: before });
    await adjustLiveMemories(work.tx, tenantId, -1);
  });
  return { deleted: true, memory_id: toUrn(id) };
}

export async function contextNow(ctx: TenantCtx, query: z.infer<typeof ContextNowQuery> = {}) {
  const { tenantId, now } = ctx;
  const filters = { key: ctx.auth.restriction, minTrust: query.min_trust, sourceKinds: query.source_kind };
  const [recent, recentCount, lastAt] = await Promise.all([
    q.recentMemories(ctx.db, tenantId, now, 5, filters),
    q.countCreatedSince(ctx.db, tenantId, new Date(now.getTime() - DAY), now, filters),
    q.lastEventAt(ctx.db, tenantId),
  ]);
  return {
    server_time_utc: now.toISOString(),
    recent_memories: recent.map(q.toMemoryDto),
    recent_count: recentCount,
    last_session_at: lastAt?.toISOString() ?? null,
    seconds_since_last_session: lastAt ? Math.max(0, Math.round((now.getTime() - lastAt.getTime()) / 1000)) : null,
  };
}
