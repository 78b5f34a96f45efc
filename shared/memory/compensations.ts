import { sql } from '../platform/data/db';
import type { Work } from '../platform/data/unit-of-work';
import { type DbOrTx, rows } from '../platform/data/db';
import { newId } from '../platform/contract/ids';

/**
 * Compensation plans: a rollback puts memories back, but what an agent did to the outside world
 * (its ACTION trace steps) stays done. A plan lists those steps as reviewable reversal actions.
 * Shared because rollback creates plans as well as the compensations family.
 */

/** Most actions one plan holds; a window with more gives a plan marked `truncated`. */
export const MAX_PLAN_ACTIONS = 1_000;
const HINT_CHARS = 500;

/** A rollback window: it undoes what happened after `to`, up to and including `from`. */
export interface RollbackWindow {
  from: Date;
  to: Date;
}

const actionStepsIn = (tenantId: string, w: RollbackWindow) =>
  sql`s.tenant_id = ${tenantId} AND s.type = 'ACTION'
      AND s.created_at > ${w.to.toISOString()}::timestamptz AND s.created_at <= ${w.from.toISOString()}::timestamptz`;

/** ACTION steps of the tenant's traces in the window (the partial index trace_steps_actions_idx). */
export async function countActionSteps(db: DbOrTx, tenantId: string, w: RollbackWindow): Promise<number> {
  const [{ n }] = await rows<{ n: number | string }>(db, sql`SELECT count(*) AS n FROM trace_steps s WHERE ${actionStepsIn(tenantId, w)}`);
  return Number(n);
}

interface StepRow {
  id: string;
  trace_id: string;
  step_index: number;
  agent_id: string | null;
  content: string;
  metadata: Record<string, unknown> | null;
  created_at: Date | string;
}

/** How to reverse a step: the agent's own `compensation` (or `undo`) hint when it left one. */
export function suggestedCompensation(content: string, metadata: Record<string, unknown> | null): string {
  for (const key of ['compensation', 'undo']) {
    const hint = metadata?.[key];
    if (typeof hint === 'string' && hint.trim()) return hint.trim();
  }
  return `Review and reverse: ${content.length > HINT_CHARS ? `${content.slice(0, HINT_CHARS)}…` : content}`;
}

export interface NewPlan {
  tenantId: string;
  window: RollbackWindow;
  /** The rollback that made the plan; null for a plan asked for in advance. */
  rollbackId: string | null;
}

/**
 * Writes a plan for the ACTION steps in the window, oldest first, with its audit entry, in the
 * caller's transaction. An empty window gives a plan with no actions that is already completed.
 */
export async function createPlan(work: Work, p: NewPlan) {
  const { tx } = work;
  const at = work.ctx.now;
  const steps = await rows<StepRow>(
    tx,
    sql`SELECT s.id, s.trace_id, s.step_index, t.agent_id, s.content, s.metadata, s.created_at
        FROM trace_steps s JOIN traces t ON t.id = s.trace_id AND t.tenant_id = s.tenant_id
        WHERE ${actionStepsIn(p.tenantId, p.window)}
        ORDER BY s.created_at, s.step_index, s.id LIMIT ${MAX_PLAN_ACTIONS + 1}`,
  );
  const truncated = steps.length > MAX_PLAN_ACTIONS;
  const actions = steps.slice(0, MAX_PLAN_ACTIONS);
  const plan = { id: newId('compensation'), actionCount: actions.length, truncated, status: actions.length ? 'pending' : 'completed' };
  await tx.execute(sql`
    INSERT INTO compensation_plans (id, tenant_id, rollback_id, rollback_from, rollback_to, status, action_count, truncated, created_by, created_at, completed_at)
    VALUES (${plan.id}, ${p.tenantId}, ${p.rollbackId}, ${p.window.from.toISOString()}, ${p.window.to.toISOString()}, ${plan.status},
            ${plan.actionCount}, ${truncated}, ${work.ctx.actor}, ${at.toISOString()}, ${actions.length ? null : at.toISOString()})`);
  if (actions.length) {
    const records = actions.map((s, i) => ({
      action_index: i,
      trace_id: s.trace_id,
      step_id: s.id,
      step_index: s.step_index,
      agent_id: s.agent_id,
      step_content: s.content,
      step_metadata: s.metadata ?? {},
      step_at: new Date(s.created_at).toISOString(),
      suggested: suggestedCompensation(s.content, s.metadata),
    }));
    await tx.execute(sql`
      INSERT INTO compensation_actions (plan_id, tenant_id, action_index, trace_id, step_id, step_index, agent_id, step_content, step_metadata, step_at, suggested)
      SELECT ${plan.id}, ${p.tenantId}, r.action_index, r.trace_id, r.step_id, r.step_index, r.agent_id, r.step_content, r.step_metadata, r.step_at, r.suggested
      FROM jsonb_to_recordset(${JSON.stringify(records)}::jsonb) AS r(action_index integer, trace_id text, step_id text, step_index integer,
        agent_id text, step_content text, step_metadata jsonb, step_at timestamptz, suggested text)`);
  }
  await work.audit({
    tenantId: p.tenantId,
    operation: 'compensation.created',
    resourceType: 'compensation_plan',
    resourceId: plan.id,
    metadata: {
      rollback_id: p.rollbackId,
      rollback_from: p.window.from.toISOString(),
      rollback_to: p.window.to.toISOString(),
      action_count: plan.actionCount,
      truncated,
    },
  });
  return plan;
}
