import { sql } from 'drizzle-orm';
import { appendAudit } from '../../shared/audit';
import { countActionSteps, createPlan } from '../../shared/compensations';
import type { Actor, AuthContext } from '../../shared/context';
import type { DbOrTx } from '../../shared/db';
import { AppError } from '../../shared/errors';
import { emitEvent } from '../../shared/events';
import { newId } from '../../shared/ids';
import { statesAt } from '../../shared/memory-history';
import { toUrn } from '../../shared/memory-access';
import { type MemoryDto, toMemoryDto } from '../../shared/memory-rows';
import { recordMemoryEvents } from '../../shared/memory-events';
import { recordMilestone } from '../../shared/milestones';
import type { Services } from '../../shared/services';
import { hasFeature, tiers } from '../../shared/tiers';
import { DAY, pastPointInTime } from '../../shared/time';
import { adjustLiveMemories, consumeQuotaInTx, usageSnapshotForError } from '../../shared/usage';
import { enqueueVectorIndexing } from '../../shared/vector-index';
import * as q from './queries';

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
async function compensations(tx: DbOrTx, auth: AuthContext, actor: Actor, meta: { rollback_id: string; target: string }, target: Date, now: Date) {
  const window = { from: now, to: target };
  const steps = await countActionSteps(tx, auth.tenantId, window);
  if (!steps) return { steps, planId: null };
  const plan = hasFeature(auth.tier, 'compensations')
    ? await createPlan(tx, { tenantId: auth.tenantId, window, rollbackId: meta.rollback_id, actor: actor.keyId, requestId: actor.requestId, at: now })
    : null;
  const planId = plan?.id ?? null;
  await emitEvent(tx, { tenantId: auth.tenantId, type: 'rollback.compensations', data: { ...meta, action_steps: steps, plan_id: planId }, at: now });
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
export async function preview(services: Services, auth: AuthContext, rawTarget: string) {
  const now = services.clock.now();
  const target = parseTarget(rawTarget, now);
  const plan = classify(await changesSince(services.db, auth.tenantId, target, false));
  const actionSteps = await countActionSteps(services.db, auth.tenantId, { from: now, to: target });
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
export async function rollback(services: Services, auth: AuthContext, actor: Actor, rawTarget: string) {
  const now = services.clock.now();
  const target = parseTarget(rawTarget, now);
  const rollbackId = newId('rollback');
  const result = await services.db.transaction(async (tx) => {
    // One rollback at a time per tenant.
    await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${`rollback:${auth.tenantId}`}, 0))`);
    if (!(await consumeQuotaInTx(tx, auth.tenantId, auth.tier, 'rollbacks', now))) {
      throw new AppError('RATE_LIMITED', 'Monthly rollback limit reached', {
        ...usageSnapshotForError(services, auth.tier, 'rollbacks', tiers[auth.tier].limits.rollbacks ?? 0, now),
      });
    }
    const plan = classify(await changesSince(tx, auth.tenantId, target, true));
    const restorable = plan.restore.filter((c) => c.pastHasEmbedding);
    const pastItem = (c: Change) => ({ state: c.past!, eventId: c.pastEventId! });
    const meta = { rollback_id: rollbackId, target: target.toISOString() };
    // Removed memories keep their links in the event, so a later rollback can bring both back.
    const removedLinks = await q.linksOf(tx, auth.tenantId, plan.remove.map((c) => c.id));
    await q.deleteMemories(tx, auth.tenantId, plan.remove.map((c) => c.id));
    await q.insertMemories(tx, auth.tenantId, restorable.map(pastItem), now);
    await q.revertMemories(tx, auth.tenantId, plan.revert.map(pastItem), now);
    const relinked = await q.restoreLinks(tx, auth.tenantId, restorable.map((c) => c.id), target, now);
    await recordMemoryEvents(tx, [
      ...plan.remove.map((c) => ({ tenantId: auth.tenantId, memoryId: c.id, kind: 'rollback' as const, at: now, actor: actor.keyId, requestId: actor.requestId, before: c.current, after: null, metadata: { ...meta, action: 'removed', links: removedLinks.get(c.id) ?? [] } })),
      ...restorable.map((c) => ({ tenantId: auth.tenantId, memoryId: c.id, kind: 'rollback' as const, at: now, actor: actor.keyId, requestId: actor.requestId, before: null, after: c.past, embeddingOfEvent: c.pastEventId, metadata: { ...meta, action: 'restored' } })),
      ...plan.revert.map((c) => ({ tenantId: auth.tenantId, memoryId: c.id, kind: 'rollback' as const, at: now, actor: actor.keyId, requestId: actor.requestId, before: c.current, after: c.past, embeddingOfEvent: c.pastEventId, metadata: { ...meta, action: 'reverted' } })),
      ...relinked.map((l) => ({ tenantId: auth.tenantId, memoryId: l.source_id, kind: 'link' as const, at: now, actor: actor.keyId, requestId: actor.requestId, metadata: { ...meta, target_id: toUrn(l.target_id), relation: l.relation, weight: Number(l.weight) } })),
    ]);
    if (restorable.length + plan.revert.length) await enqueueVectorIndexing(tx, auth.tenantId, now);
    await adjustLiveMemories(tx, auth.tenantId, restorable.length - plan.remove.length);
    const counts = { removed: plan.remove.length, restored: restorable.length, reverted: plan.revert.length };
    await appendAudit(tx, {
      tenantId: auth.tenantId,
      operation: 'rollback',
      resourceType: 'memory_store',
      actor: actor.keyId,
      requestId: actor.requestId,
      metadata: { ...meta, ...counts, restored_count: counts.restored, removed_count: counts.removed },
      at: now,
    });
    await q.insertHistory(tx, { id: rollbackId, tenantId: auth.tenantId, target, actor: actor.keyId, ...counts, at: now });
    await emitEvent(tx, { tenantId: auth.tenantId, type: 'rollback.completed', data: { ...meta, ...counts }, at: now });
    await recordMilestone(tx, auth.tenantId, 'first_rollback', now, meta);
    return { ...counts, compensation: await compensations(tx, auth, actor, meta, target, now) };
  });
  services.notifyJobs();
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

export async function history(services: Services, auth: AuthContext, limit: number, offset: number) {
  const { page, total } = await q.listHistory(services.db, auth.tenantId, limit, offset);
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
    total,
  };
}

