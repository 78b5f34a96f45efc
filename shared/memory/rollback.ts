import type { TenantCtx } from '../platform/contract/context';
import { sql } from '../platform/data/db';
import { type DbOrTx, rows } from '../platform/data/db';
import { toUrn } from '../platform/contract/ids';
import type { Work } from '../platform/data/unit-of-work';
import { adjustLiveMemories, spendQuota } from '../platform/data/usage';
import { restoreMentions } from './entities';
import { statesAt } from './history';
import * as q from './rollback-rows';
import { type MemoryDto, toMemoryDto } from './rows';
import { enqueueVectorIndexing } from './vector-index';

/**
 * The rollback engine: puts memories back to their state at a target time, replaying the memory
 * event log backwards (created after it → removed, deleted → restored, updated → reverted). The
 * rollback family runs it over the whole store; a mission rollback (functions/runtime) over the
 * memories one agent wrote after a checkpoint (`agentId`).
 */

export interface Change {
  id: string;
  current: MemoryDto | null;
  past: MemoryDto | null;
  /** The event that recorded the state at the target, and whether its embedding is on record. */
  pastEventId: number | null;
  pastHasEmbedding: boolean;
}

/** The fields a rollback puts back; recall statistics are history, not content, and stay. */
const CONTENT = ['observation', 'tags', 'importance', 'confidence', 'superseded_by', 'context', 'agent_id', 'space_id', 'hash', 'expires_at'] as const;
const sameContent = (a: MemoryDto, b: MemoryDto) => CONTENT.every((k) => JSON.stringify(a[k]) === JSON.stringify(b[k]));

/** Every memory whose content changed after the target (written by `agentId` when given), with its state then and now. */
export async function changesSince(tx: DbOrTx, tenantId: string, target: Date, lock: boolean, agentId?: string): Promise<Change[]> {
  const ids = await q.changedSince(tx, tenantId, target, agentId);
  if (!ids.length) return [];
  const past = new Map((await statesAt(tx, tenantId, target, ids)).map((p) => [p.memoryId, p]));
  const current = new Map((await q.currentRows(tx, tenantId, ids, lock)).map((r) => [r.id, toMemoryDto(r)]));
  return ids
    .map((id) => {
      const then = past.get(id);
      return {
        id,
        current: current.get(id) ?? null,
        past: then?.state ?? null,
        pastEventId: then?.eventId ?? null,
        pastHasEmbedding: then?.hasEmbedding ?? false,
      };
    })
    .filter((c) => (c.current && c.past ? !sameContent(c.current, c.past) : c.current !== c.past));
}

/**
 * Memories that lived at `target` and were erased since (table erased_memories, migrations/0034):
 * no rollback can bring them back, and previews and results say how many.
 */
export async function erasedSince(db: DbOrTx, tenantId: string, target: Date): Promise<number> {
  const [found] = await rows<{ n: number | string }>(
    db,
    sql`SELECT count(*) AS n FROM erased_memories
        WHERE tenant_id = ${tenantId} AND erased_at > ${target.toISOString()}::timestamptz AND lived_from <= ${target.toISOString()}::timestamptz
          AND (lived_to IS NULL OR lived_to > ${target.toISOString()}::timestamptz)`,
  );
  return Number(found?.n ?? 0);
}

export function classify(changes: Change[]) {
  return {
    remove: changes.filter((c) => c.current && !c.past),
    restore: changes.filter((c) => !c.current && c.past),
    revert: changes.filter((c) => c.current && c.past),
  };
}

export interface RollbackCounts {
  removed: number;
  restored: number;
  reverted: number;
  /** Memories that lived at the target but were erased: not restored. */
  erased: number;
}

/**
 * Rolls memories back to `target` inside the caller's unit of work: one rollback at a time per
 * tenant, the monthly rollback quota, each change a `rollback` memory event (so replay and a later
 * rollback see it), one audit entry, a history row, the `rollback.completed` event and the
 * milestone. `meta` (at least `rollback_id` and `target`) goes into the events and the audit entry;
 * `agentId` narrows it to the memories that agent wrote after the target.
 */
export async function rollbackMemories(
  work: Work<TenantCtx>,
  input: { rollbackId: string; target: Date; agentId?: string; meta?: Record<string, unknown> },
): Promise<RollbackCounts> {
  const { tx, ctx } = work;
  const { now, tenantId } = ctx;
  const { target, rollbackId } = input;
  await work.lock(`rollback:${tenantId}`); // one rollback at a time per tenant
  await spendQuota(ctx, tx, 'rollbacks', ctx, 'Monthly rollback limit reached');
  const plan = classify(await changesSince(tx, tenantId, target, true, input.agentId));
  const restorable = plan.restore.filter((c) => c.pastHasEmbedding);
  const pastItem = (c: Change) => ({ state: c.past!, eventId: c.pastEventId! });
  const meta = { rollback_id: rollbackId, target: target.toISOString(), ...input.meta };
  // Removed memories keep their links in the event, so a later rollback can bring both back.
  const removedLinks = await q.linksOf(
    tx,
    tenantId,
    plan.remove.map((c) => c.id),
  );
  await q.deleteMemories(
    tx,
    tenantId,
    plan.remove.map((c) => c.id),
  );
  await q.insertMemories(tx, tenantId, restorable.map(pastItem), now);
  await q.revertMemories(tx, tenantId, plan.revert.map(pastItem), now);
  const past = await q.linksAt(
    tx,
    tenantId,
    restorable.map((c) => c.id),
    target,
  );
  const relinked = await q.restoreLinks(tx, tenantId, past, now);
  const mentioned = await restoreMentions(tx, tenantId, past, now, meta);
  await work.memoryEvents([
    ...plan.remove.map((c) => ({
      memoryId: c.id,
      kind: 'rollback' as const,
      before: c.current,
      after: null,
      metadata: { ...meta, action: 'removed', links: removedLinks.get(c.id) ?? [] },
    })),
    ...restorable.map((c) => ({
      memoryId: c.id,
      kind: 'rollback' as const,
      before: null,
      after: c.past,
      embeddingOfEvent: c.pastEventId,
      metadata: { ...meta, action: 'restored' },
    })),
    ...plan.revert.map((c) => ({
      memoryId: c.id,
      kind: 'rollback' as const,
      before: c.current,
      after: c.past,
      embeddingOfEvent: c.pastEventId,
      metadata: { ...meta, action: 'reverted' },
    })),
    ...relinked.map((l) => ({
      memoryId: l.source_id,
      kind: 'link' as const,
      metadata: { ...meta, target_id: toUrn(l.target_id), relation: l.relation, weight: Number(l.weight) },
    })),
    ...mentioned,
  ]);
  if (restorable.length + plan.revert.length) await enqueueVectorIndexing(work);
  const counts = { removed: plan.remove.length, restored: restorable.length, reverted: plan.revert.length, erased: await erasedSince(tx, tenantId, target) };
  await work.audit({
    operation: 'rollback',
    resourceType: 'memory_store',
    metadata: { ...meta, ...counts, restored_count: counts.restored, removed_count: counts.removed },
  });
  // After the audit head, in the order every memory write takes them (head, then counter), so they cannot deadlock.
  await adjustLiveMemories(tx, tenantId, restorable.length - plan.remove.length);
  await q.insertHistory(tx, { id: rollbackId, tenantId, target, actor: ctx.actor, ...counts, at: now });
  await work.event('rollback.completed', { ...meta, ...counts });
  await work.milestone('first_rollback', meta);
  return counts;
}
