import { type SQL, sql } from 'drizzle-orm';
import { type DbOrTx, rows } from '../../shared/platform/data/db';
import type { ActionRow, PlanRow } from './schemas';

const PLAN_COLUMNS = sql.raw('p.id, p.rollback_id, p.rollback_from, p.rollback_to, p.status, p.action_count, p.truncated, p.created_at, p.completed_at');
const ACTION_COLUMNS = sql.raw(
  'a.action_index, a.trace_id, a.step_id, a.step_index, a.agent_id, a.step_content, a.step_metadata, a.step_at, a.suggested, a.status, a.detail, a.acknowledged_at, a.acknowledged_by',
);

/** Plans of the query `plans` (alias p, with PLAN_COLUMNS) with their action counts per status. */
const withCounts = (plans: SQL) => sql`
  SELECT p.*, c.pending, c.completed, c.failed, c.skipped FROM (${plans}) p
  CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE a.status = 'pending') AS pending, count(*) FILTER (WHERE a.status = 'completed') AS completed,
           count(*) FILTER (WHERE a.status = 'failed') AS failed, count(*) FILTER (WHERE a.status = 'skipped') AS skipped
    FROM compensation_actions a WHERE a.plan_id = p.id AND a.tenant_id = p.tenant_id) c`;

export async function listPage(db: DbOrTx, tenantId: string, status: string | undefined, limit: number, offset: number) {
  const where = sql`p.tenant_id = ${tenantId} ${status ? sql`AND p.status = ${status}` : sql``}`;
  const page = await rows<PlanRow>(
    db,
    sql`${withCounts(sql`SELECT ${PLAN_COLUMNS}, p.tenant_id FROM compensation_plans p WHERE ${where}
                         ORDER BY p.created_at DESC, p.id DESC LIMIT ${limit} OFFSET ${offset}`)}
        ORDER BY p.created_at DESC, p.id DESC`,
  );
  const [{ n }] = await rows<{ n: number | string }>(db, sql`SELECT count(*) AS n FROM compensation_plans p WHERE ${where}`);
  return { page, total: Number(n) };
}

export async function findPlan(db: DbOrTx, tenantId: string, id: string): Promise<PlanRow | undefined> {
  const [plan] = await rows<PlanRow>(
    db,
    withCounts(sql`SELECT ${PLAN_COLUMNS}, p.tenant_id FROM compensation_plans p WHERE p.tenant_id = ${tenantId} AND p.id = ${id}`),
  );
  return plan;
}

export function actionsOf(db: DbOrTx, tenantId: string, planId: string) {
  return rows<ActionRow>(
    db,
    sql`SELECT ${ACTION_COLUMNS} FROM compensation_actions a WHERE a.tenant_id = ${tenantId} AND a.plan_id = ${planId} ORDER BY a.action_index`,
  );
}

/** Locks the plan row: acknowledgments of one plan run one after another, so none is lost. */
export async function lockPlan(tx: DbOrTx, tenantId: string, id: string): Promise<boolean> {
  const found = await rows(tx, sql`SELECT 1 FROM compensation_plans WHERE tenant_id = ${tenantId} AND id = ${id} FOR UPDATE`);
  return found.length > 0;
}

export async function actionStatus(tx: DbOrTx, tenantId: string, planId: string, index: number) {
  const [action] = await rows<{ status: ActionRow['status'] }>(
    tx,
    sql`SELECT status FROM compensation_actions WHERE tenant_id = ${tenantId} AND plan_id = ${planId} AND action_index = ${index}`,
  );
  return action?.status;
}

export async function acknowledge(
  tx: DbOrTx,
  a: { tenantId: string; planId: string; index: number; status: string; detail: string | null; by: string | null; at: Date },
) {
  const [row] = await rows<ActionRow>(
    tx,
    sql`UPDATE compensation_actions a SET status = ${a.status}, detail = ${a.detail}, acknowledged_at = ${a.at.toISOString()}, acknowledged_by = ${a.by}
        WHERE a.tenant_id = ${a.tenantId} AND a.plan_id = ${a.planId} AND a.action_index = ${a.index}
        RETURNING ${ACTION_COLUMNS}`,
  );
  return row;
}

/** Moves the plan on: `completed` once no action is pending, else `in_progress`. */
export async function advancePlan(tx: DbOrTx, tenantId: string, planId: string, at: Date): Promise<PlanRow> {
  await tx.execute(sql`
    UPDATE compensation_plans p SET
      status = CASE WHEN pending.n = 0 THEN 'completed' ELSE 'in_progress' END,
      completed_at = CASE WHEN pending.n = 0 THEN coalesce(p.completed_at, ${at.toISOString()}::timestamptz) END
    FROM (SELECT count(*) AS n FROM compensation_actions
          WHERE tenant_id = ${tenantId} AND plan_id = ${planId} AND status = 'pending') pending
    WHERE p.tenant_id = ${tenantId} AND p.id = ${planId}`);
  return (await findPlan(tx, tenantId, planId))!;
}
