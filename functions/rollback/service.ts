import { countActionSteps, createPlan } from '../../shared/memory/compensations';
import { changesSince, classify, erasedSince, rollbackMemories } from '../../shared/memory/rollback';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { newId } from '../../shared/platform/contract/ids';
import type { PageInput } from '../../shared/platform/data/pagination';
import { hasFeature, tiers } from '../../shared/platform/contract/tiers';
import { DAY, pastPointInTime } from '../../shared/platform/contract/time';
import { type Work, write } from '../../shared/platform/data/unit-of-work';
import * as q from './queries';
import { HistoryPaging } from './schemas';

export const parseTarget = (value: string, now: Date): Date => pastPointInTime('target', value, now);

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

/** What a rollback to `target` would do, with honest warnings; writes nothing. */
export async function preview(ctx: TenantCtx, input: { target: string }) {
  const { now, auth } = ctx;
  const target = parseTarget(input.target, now);
  const plan = classify(await changesSince(ctx.db, auth.tenantId, target, false));
  const actionSteps = await countActionSteps(ctx.db, auth.tenantId, { from: now, to: target });
  const erased = await erasedSince(ctx.db, auth.tenantId, target);
  const warnings: string[] = [];
  const retentionDays = tiers[auth.tier].limits.audit_retention_days;
  if (now.getTime() - target.getTime() > retentionDays * DAY) {
    warnings.push(
      `The target is older than the ${retentionDays}-day audit retention of the ${auth.tier} tier; the rollback itself is recorded, but the audit trail of that period is gone.`,
    );
  }
  const missing = plan.restore.filter((c) => !c.pastHasEmbedding).length;
  if (missing) warnings.push(`${missing} memories have no stored embedding for their state at the target and cannot be restored.`);
  if (plan.remove.length)
    warnings.push(
      `${plan.remove.length} ${plan.remove.length === 1 ? 'memory' : 'memories'} created after the target will be removed. Their history is kept: a rollback to a time after they were created and before this rollback brings them back.`,
    );
  if (erased) warnings.push(`${erased} ${erased === 1 ? 'memory' : 'memories'} of the target time were erased (POST /v1/erasures) and cannot be restored.`);
  const sideEffects = actionSteps
    ? [
        `${actionSteps} ACTION trace steps after the target may have had external side effects that a rollback does not undo; see POST /v1/compensations/preview.`,
      ]
    : [];
  const size = [...plan.remove, ...plan.restore, ...plan.revert].reduce((n, c) => n + new TextEncoder().encode((c.current ?? c.past)!.observation).length, 0);
  return {
    target_timestamp: target.toISOString(),
    artifacts_modified: plan.restore.length + plan.revert.length,
    artifacts_deleted: plan.remove.length,
    artifacts_restored: plan.restore.length,
    memories_reverted: plan.revert.length,
    erased,
    size_bytes: size,
    safe_rollback: plan.remove.length === 0 && missing === 0 && actionSteps === 0,
    // Memory warnings matter only when memories would change; side effects of agents always do.
    warnings: [...(plan.remove.length + plan.restore.length + plan.revert.length + erased ? warnings : []), ...sideEffects],
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
  const target = parseTarget(input.target, ctx.now);
  const rollbackId = newId('rollback');
  const result = await write(ctx, async (work) => {
    const meta = { rollback_id: rollbackId, target: target.toISOString() };
    const counts = await rollbackMemories(work, { rollbackId, target });
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
    erased: result.erased,
    compensation_plan_id: planId,
    message:
      (changed
        ? `Rolled back to ${target.toISOString()}: ${result.removed} removed, ${result.restored} restored, ${result.reverted} reverted.`
        : 'Nothing changed since the target; the store already matches it.') +
      (result.erased ? ` ${result.erased} erased ${result.erased === 1 ? 'memory' : 'memories'} of that time stay erased.` : '') +
      sideEffects,
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
