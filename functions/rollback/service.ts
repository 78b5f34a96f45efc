import { toUrn } from '../../shared/platform/ids';
import { countActionSteps, createPlan } from '../../shared/memory/compensations';
import { restoreMentions } from '../../shared/memory/entities';
import { statesAt } from '../../shared/memory/history';
import { type MemoryDto, toMemoryDto } from '../../shared/memory/rows';
import { enqueueVectorIndexing } from '../../shared/memory/vector-index';
import type { TenantCtx } from '../../shared/platform/context';
import type { DbOrTx } from '../../shared/platform/db';
import { newId } from '../../shared/platform/ids';
import type { PageInput } from '../../shared/platform/pagination';
import { hasFeature, tiers } from '../../shared/platform/tiers';
import { DAY, pastPointInTime } from '../../shared/platform/time';
import { type Work, write } from '../../shared/platform/unit-of-work';
import { adjustLiveMemories, spendQuota } from '../../shared/platform/usage';
import * as q from './queries';
import { HistoryPaging } from './schemas';

interface Change {
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

export const parseTarget = (value: string, now: Date): Date => pastPointInTime('target', value, now);

/** Every memory whose content changed after the target, with its state then and now. */
async function changesSince(tx: DbOrTx, tenantId: string, target: Date, lock: boolean): Promise<Change[]> {
  const ids = await q.changedSince(tx, tenantId, target);
  if (!ids.length) return [];
  const past = new Map((await statesAt(tx, tenantId, target, ids)).map((p) => [p.memoryId, p]));
  const current = new Map((await q.currentRows(tx, tenantId, ids, lock)).map((r) => [r.id, toMemoryDto(r)]));
  return ids
    .map((id) => {
      const then = past.get(id);
      return { id, current: current.get(id) ?? null, past: then?.state ?? null, pastEventId: then?.eventId ?? null, pastHasEmbedding: then?.hasEmbedding ?? false };
    })
    .filter((c) => (c.current && c.past ? !sameContent(c.current, c.past) : c.current !== c.past));
}

/**
 * ACTION trace steps after the target may have reached the outside world, which a rollback does
 * not undo. Says so with `rollback.compensations` and, on tiers with compensations, plans their
 * reversal; in the rollback's transaction. Returns the step count and the plan id (null without one).
 */
async function compensations(work: Work<TenantCtx>, meta: { rollback_id: string; target: string }, target: Date) {
  const { tenantId, tier, now } = work.ctx;
  const window = { from: now, to: target };
  const steps = await countActionSteps(work.tx, tenantId, window);
  if (!steps) return { steps, planId: null };
  const plan = hasFeature(tier, 'compensations') ? await createPlan(work, { tenantId, window, rollbackId: meta.rollback_id }) : null;
  const planId = plan?.id ?? null;
  await work.event('rollback.compensations', { ...meta, action_steps: steps, plan_id: planId });
  return { steps, planId };
}

function classify(changes: Change[]) {
  return {
    remove: changes.filter((c) => c.current && !c.past),
    restore: changes.filter((c) => !c.current && c.past),
    revert: changes.filter((c) => c.current && c.past),
  };
}

/** What a rollback to `target` would do, with honest warnings; writes nothing. */
export async function preview(ctx: TenantCtx, input: { target: string }) {
  const { now, auth } = ctx;
  const target = parseTarget(input.target, now);
  const plan = classify(await changesSince(ctx.db, auth.tenantId, target, false));
  const actionSteps = await countActionSteps(ctx.db, auth.tenantId, { from: now, to: target });
  const warnings: string[] = [];
  const retentionDays = tiers[auth.tier].limits.audit_retention_days;
  if (now.getTime() - target.getTime() > retentionDays * DAY) {
    warnings.push(`The target is older than the ${retentionDays}-day audit retention of the ${auth.tier} tier; the rollback itself is recorded, but the audit trail of that period is gone.`);
  }
  const missing = plan.restore.filter((c) => !c.pastHasEmbedding).length;
  if (missing) warnings.push(`${missing} memories have no stored embedding for their state at the target and cannot be restored.`);
  if (plan.remove.length) warnings.push(`${plan.remove.length} memories created after the target will be removed permanently (a later rollback to a time before this one brings them back).`);
  const sideEffects = actionSteps
    ? [`${actionSteps} ACTION trace steps after the target may have had external side effects that a rollback does not undo; see POST /v1/compensations/preview.`]
    : [];
  const size = [...plan.remove, ...plan.restore, ...plan.revert].reduce(
    (n, c) => n + new TextEncoder().encode((c.current ?? c.past)!.observation).length,
    0,
  );
  return {
    target_timestamp: target.toISOString(),
    artifacts_modified: plan.restore.length + plan.revert.length,
    artifacts_deleted: plan.remove.length,
    artifacts_restored: plan.restore.length,
    memories_reverted: plan.revert.length,
    size_bytes: size,
    safe_rollback: plan.remove.length === 0 && missing === 0 && actionSteps === 0,
    // Memory warnings matter only when memories would change; side effects of agents always do.
    warnings: [...(plan.remove.length + plan.restore.length + plan.revert.length ? warnings : []), ...sideEffects],
  };
}

/**
 * Puts the tenant's memories back to their state at `target`, in one transaction: memories created
 * after it are removed, deleted ones restored, changed ones reverted; each change is a `rollback`
 * event (so replay and a later rollback see it), with one audit entry, the `rollback.completed`
 * event, the monthly rollback count and the milestone. Rolling back twice to one target changes
 * nothing the second time; rolling back to a time before a rollback undoes it.
 */
export async function rollback(ctx: TenantCtx, input: { target: string }) {
  const { now, tenantId } = ctx;
  const target = parseTarget(input.target, now);
  const rollbackId = newId('rollback');
  const result = await write(ctx, async (work) => {
    const { tx } = work;
    await work.lock(`rollback:${tenantId}`); // one rollback at a time per tenant
    await spendQuota(ctx, tx, 'rollbacks', ctx, 'Monthly rollback limit reached');
    const plan = classify(await changesSince(tx, tenantId, target, true));
    const restorable = plan.restore.filter((c) => c.pastHasEmbedding);
    const pastItem = (c: Change) => ({ state: c.past!, eventId: c.pastEventId! });
    const meta = { rollback_id: rollbackId, target: target.toISOString() };
    // Removed memories keep their links in the event, so a later rollback can bring both back.
    const removedLinks = await q.linksOf(tx, tenantId, plan.remove.map((c) => c.id));
    await q.deleteMemories(tx, tenantId, plan.remove.map((c) => c.id));
    await q.insertMemories(tx, tenantId, restorable.map(pastItem), now);
    await q.revertMemories(tx, tenantId, plan.revert.map(pastItem), now);
    const past = await q.linksAt(tx, tenantId, restorable.map((c) => c.id), target);
    const relinked = await q.restoreLinks(tx, tenantId, past, now);
    const mentioned = await restoreMentions(tx, tenantId, past, now, meta);
    await work.memoryEvents([
      ...plan.remove.map((c) => ({ memoryId: c.id, kind: 'rollback' as const, before: c.current, after: null, metadata: { ...meta, action: 'removed', links: removedLinks.get(c.id) ?? [] } })),
      ...restorable.map((c) => ({ memoryId: c.id, kind: 'rollback' as const, before: null, after: c.past, embeddingOfEvent: c.pastEventId, metadata: { ...meta, action: 'restored' } })),
      ...plan.revert.map((c) => ({ memoryId: c.id, kind: 'rollback' as const, before: c.current, after: c.past, embeddingOfEvent: c.pastEventId, metadata: { ...meta, action: 'reverted' } })),
      ...relinked.map((l) => ({ memoryId: l.source_id, kind: 'link' as const, metadata: { ...meta, target_id: toUrn(l.target_id), relation: l.relation, weight: Number(l.weight) } })),
      ...mentioned,
    ]);
    if (restorable.length + plan.revert.length) await enqueueVectorIndexing(work);
    const counts = { removed: plan.remove.length, restored: restorable.length, reverted: plan.revert.length };
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
    return { ...counts, compensation: await compensations(work, meta, target) };
  });
  const changed = result.removed + result.restored + result.reverted;
  const { steps, planId } = result.compensation;
  const sideEffects = !steps
    ? ''
    : ` ${steps} ACTION trace steps after the target may have had external side effects that were not undone${planId ? `; compensation plan ${planId} lists them` : ''}.`;
  return {
    success: true,
    rollback_id: rollbackId,
    rolled_back_to: target.toISOString(),
    artifacts_restored: result.restored,
    operations_undone: result.removed,
    memories_reverted: result.reverted,
    compensation_plan_id: planId,
    message: (changed ? `Rolled back to ${target.toISOString()}: ${result.removed} removed, ${result.restored} restored, ${result.reverted} reverted.` : 'Nothing changed since the target; the store already matches it.') + sideEffects,
  };
}

export async function history(ctx: TenantCtx, query: PageInput) {
  const { page, total } = await q.listHistory(ctx.db, ctx.tenantId, query.limit, query.offset);
  return {
    rollbacks: page.map((r) => ({
      rollback_id: r.id,
      target: new Date(r.target).toISOString(),
      performed_at: new Date(r.created_at).toISOString(),
      actor: r.actor,
      operations_undone: Number(r.removed),
      artifacts_restored: Number(r.restored),
      memories_reverted: Number(r.reverted),
    })),
    ...HistoryPaging.meta(total, query, page.length),
  };
}

