import type { z } from '@hono/zod-openapi';
import { createPlan } from '../../shared/memory/compensations';
import type { TenantCtx } from '../../shared/platform/contract/context';
import type { DbOrTx } from '../../shared/platform/data/db';
import { conflict, notFound } from '../../shared/platform/contract/errors';
import { assertRange } from '../../shared/platform/contract/params';
import { pastPointInTime } from '../../shared/platform/contract/time';
import { write } from '../../shared/platform/data/unit-of-work';
import * as q from './queries';
import { type AckBody, ListPaging, type ListQuery, type PreviewBody, toActionDto, toPlanSummary } from './schemas';

async function readPlan(db: DbOrTx, tenantId: string, id: string) {
  const plan = await q.findPlan(db, tenantId, id);
  if (!plan) throw notFound('Compensation plan');
  return { ...toPlanSummary(plan), actions: (await q.actionsOf(db, tenantId, id)).map(toActionDto) };
}

/**
 * Plans the reversal of what a rollback from `rollback_from` back to `rollback_to` cannot undo:
 * one action per ACTION trace step created in (rollback_to, rollback_from], oldest first.
 */
export async function preview(ctx: TenantCtx, body: z.infer<typeof PreviewBody>) {
  const from = pastPointInTime('rollback_from', body.rollback_from, ctx.now);
  const to = pastPointInTime('rollback_to', body.rollback_to, ctx.now);
  assertRange(to, from, 'rollback_to', 'rollback_from');
  return write(ctx, async (work) => {
    const plan = await createPlan(work, { tenantId: ctx.tenantId, window: { from, to }, rollbackId: null });
    return readPlan(work.tx, ctx.tenantId, plan.id);
  });
}

export async function list(ctx: TenantCtx, query: z.infer<typeof ListQuery>) {
  const { page, total } = await q.listPage(ctx.db, ctx.tenantId, query.status, query.limit, query.offset);
  return { compensations: page.map(toPlanSummary), ...ListPaging.meta(total, query, page.length) };
}

export async function get(ctx: TenantCtx, input: { id: string }) {
  return readPlan(ctx.db, ctx.tenantId, input.id);
}

/**
 * Records what became of one action. `completed` and `skipped` are final (409 CONFLICT after);
 * a `failed` action may be acknowledged again. The plan row is locked first, so concurrent
 * acknowledgments of one plan queue up and the last one sees every other and completes the plan.
 */
export async function acknowledge(ctx: TenantCtx, input: { id: string; index: number } & z.infer<typeof AckBody>) {
  const { tenantId, now } = ctx;
  const { id, index } = input;
  return write(ctx, async ({ tx, audit }) => {
    if (!(await q.lockPlan(tx, tenantId, id))) throw notFound('Compensation plan');
    const previous = await q.actionStatus(tx, tenantId, id, index);
    if (!previous) throw notFound(`Action ${index} of the compensation plan`);
    if (previous === 'completed' || previous === 'skipped') {
      throw conflict(`Action ${index} is already ${previous}; only pending and failed actions can be acknowledged`, { action_status: previous });
    }
    const detail = input.detail ?? null;
    const action = await q.acknowledge(tx, { tenantId, planId: id, index, status: input.status, detail, by: ctx.actor, at: now });
    const plan = await q.advancePlan(tx, tenantId, id, now);
    await audit({
      operation: 'compensation.acknowledged',
      resourceType: 'compensation_plan',
      resourceId: id,
      metadata: { action_index: index, step_id: action.step_id, status: input.status, previous_status: previous, detail, plan_status: plan.status },
    });
    const summary = toPlanSummary(plan);
    return { plan_id: id, plan_status: summary.status, completed_at: summary.completed_at, counts: summary.counts, action: toActionDto(action) };
  });
}
