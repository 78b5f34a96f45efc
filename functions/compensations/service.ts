import type { z } from '@hono/zod-openapi';
import { appendAudit } from '../../shared/audit';
import { createPlan } from '../../shared/compensations';
import type { Actor, AuthContext } from '../../shared/context';
import type { DbOrTx } from '../../shared/db';
import { AppError, notFound } from '../../shared/errors';
import type { Services } from '../../shared/services';
import { requireFeature } from '../../shared/tiers';
import { pastPointInTime } from '../../shared/time';
import * as q from './queries';
import { type AckBody, type ListQuery, type PreviewBody, toActionDto, toPlanSummary } from './schemas';

async function readPlan(db: DbOrTx, tenantId: string, id: string) {
  const plan = await q.findPlan(db, tenantId, id);
  if (!plan) throw notFound('Compensation plan');
  return { ...toPlanSummary(plan), actions: (await q.actionsOf(db, tenantId, id)).map(toActionDto) };
}

/**
 * Plans the reversal of what a rollback from `rollback_from` back to `rollback_to` cannot undo:
 * one action per ACTION trace step created in (rollback_to, rollback_from], oldest first.
 */
export async function preview(services: Services, auth: AuthContext, actor: Actor, body: z.infer<typeof PreviewBody>) {
  requireFeature(auth.tier, 'compensations');
  const now = services.clock.now();
  const from = pastPointInTime('rollback_from', body.rollback_from, now);
  const to = pastPointInTime('rollback_to', body.rollback_to, now);
  if (to > from) {
    throw new AppError('INVALID_RANGE', 'rollback_to must not be after rollback_from', {
      details: [{ path: 'rollback_to', message: 'must not be after rollback_from' }],
    });
  }
  return services.db.transaction(async (tx) => {
    const plan = await createPlan(tx, { tenantId: auth.tenantId, window: { from, to }, rollbackId: null, actor: actor.keyId, requestId: actor.requestId, at: now });
    return readPlan(tx, auth.tenantId, plan.id);
  });
}

export async function list(services: Services, auth: AuthContext, query: z.infer<typeof ListQuery>) {
  requireFeature(auth.tier, 'compensations');
  const { page, total } = await q.listPage(services.db, auth.tenantId, query.status, query.limit, query.offset);
  return { compensations: page.map(toPlanSummary), total, has_more: query.offset + page.length < total };
}

export async function get(services: Services, auth: AuthContext, id: string) {
  requireFeature(auth.tier, 'compensations');
  return readPlan(services.db, auth.tenantId, id);
}

/**
 * Records what became of one action. `completed` and `skipped` are final (409 CONFLICT after);
 * a `failed` action may be acknowledged again. The plan row is locked first, so concurrent
 * acknowledgments of one plan queue up and the last one sees every other and completes the plan.
 */
export async function acknowledge(services: Services, auth: AuthContext, actor: Actor, id: string, index: number, body: z.infer<typeof AckBody>) {
  requireFeature(auth.tier, 'compensations');
  const now = services.clock.now();
  return services.db.transaction(async (tx) => {
    if (!(await q.lockPlan(tx, auth.tenantId, id))) throw notFound('Compensation plan');
    const previous = await q.actionStatus(tx, auth.tenantId, id, index);
    if (!previous) throw notFound(`Action ${index} of the compensation plan`);
    if (previous === 'completed' || previous === 'skipped') {
      throw new AppError('CONFLICT', `Action ${index} is already ${previous}; only pending and failed actions can be acknowledged`, { action_status: previous });
    }
    const action = await q.acknowledge(tx, { tenantId: auth.tenantId, planId: id, index, status: body.status, detail: body.detail ?? null, by: actor.keyId, at: now });
    const plan = await q.advancePlan(tx, auth.tenantId, id, now);
    await appendAudit(tx, {
      tenantId: auth.tenantId,
      operation: 'compensation.acknowledged',
      resourceType: 'compensation_plan',
      resourceId: id,
      actor: actor.keyId,
      requestId: actor.requestId,
      metadata: { action_index: index, step_id: action.step_id, status: body.status, previous_status: previous, detail: body.detail ?? null, plan_status: plan.status },
      at: now,
    });
    const summary = toPlanSummary(plan);
    return { plan_id: id, plan_status: summary.status, completed_at: summary.completed_at, counts: summary.counts, action: toActionDto(action) };
  });
}
