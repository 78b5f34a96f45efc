import { and, asc, count, eq, inArray, lt, type SQL, sql } from 'drizzle-orm';
import { actionDecisions, actions, controlSettings, teamMembers } from '../../schema';
import type { ActionState } from '../../schema/actions';
import type { ControlSettings } from '../../shared/control/settings';
import type { DbOrTx } from '../../shared/platform/db';
import type { PageInput } from '../../shared/platform/pagination';

export type ActionRow = typeof actions.$inferSelect;
export type DecisionRow = typeof actionDecisions.$inferSelect;
export type TeamRole = (typeof teamMembers.$inferSelect)['role'];

/** Inserts a complete row (no RETURNING: the caller has every field already). */
export async function insertAction(db: DbOrTx, row: ActionRow): Promise<ActionRow> {
  await db.insert(actions).values(row);
  return row;
}

/** An action of the tenant; `lock` holds its row until the transaction ends (one decision at a time). */
export async function actionOf(db: DbOrTx, tenantId: string, actionId: string, lock = false): Promise<ActionRow | null> {
  const query = db.select().from(actions).where(and(eq(actions.tenantId, tenantId), eq(actions.id, actionId)));
  const [found] = lock ? await query.for('update') : await query;
  return found ?? null;
}

/**
 * A pending-or-decided approval that `deciderTenantId` may see: one of its own, or, when the action
 * was submitted in team or enterprise mode, one of a tenant it shares a team with (the membership
 * is checked here, in the query, so a non-member's lookup finds nothing, as for an unknown id).
 * Locked FOR UPDATE: concurrent decisions on one action run one after another.
 */
export async function approvalFor(db: DbOrTx, deciderTenantId: string, actionId: string): Promise<ActionRow | null> {
  const sharesTeam = sql`EXISTS (
    SELECT 1 FROM team_members submitter JOIN team_members decider ON decider.team_id = submitter.team_id
    WHERE submitter.tenant_id = ${actions.tenantId} AND decider.tenant_id = ${deciderTenantId})`;
  const [found] = await db
    .select()
    .from(actions)
    .where(
      and(
        eq(actions.id, actionId),
        eq(actions.reviewable, true),
        sql`(${actions.tenantId} = ${deciderTenantId} OR (${actions.approvalMode} IN ('team', 'enterprise') AND ${sharesTeam}))`,
      ),
    )
    .for('update');
  return found ?? null;
}

/**
 * The roles `deciderTenantId` holds in teams that include `submitterTenantId` (for the submitter
 * itself: its roles in its own teams).
 */
export async function sharedRoles(db: DbOrTx, submitterTenantId: string, deciderTenantId: string): Promise<TeamRole[]> {
  const teamsOfSubmitter = db.select({ id: teamMembers.teamId }).from(teamMembers).where(eq(teamMembers.tenantId, submitterTenantId));
  const found = await db
    .select({ role: teamMembers.role })
    .from(teamMembers)
    .where(and(eq(teamMembers.tenantId, deciderTenantId), inArray(teamMembers.teamId, teamsOfSubmitter)));
  return [...new Set(found.map((r) => r.role))];
}

export async function decisionsOf(db: DbOrTx, tenantId: string, actionId: string): Promise<DecisionRow[]> {
  return db
    .select()
    .from(actionDecisions)
    .where(and(eq(actionDecisions.tenantId, tenantId), eq(actionDecisions.actionId, actionId)))
    .orderBy(asc(actionDecisions.createdAt), asc(actionDecisions.id));
}

export async function insertDecision(db: DbOrTx, row: typeof actionDecisions.$inferInsert) {
  await db.insert(actionDecisions).values(row);
}

export async function updateAction(
  db: DbOrTx,
  tenantId: string,
  actionId: string,
  set: Partial<Pick<ActionRow, 'status' | 'decidedAt' | 'reason' | 'resultDetail' | 'resultAt' | 'lastSeq'>>,
): Promise<ActionRow> {
  const [updated] = await db
    .update(actions)
    .set(set)
    .where(and(eq(actions.tenantId, tenantId), eq(actions.id, actionId)))
    .returning();
  return updated;
}

/** The approval queue: actions that were ever pending, in the order of their latest audit entry. */
export async function queue(db: DbOrTx, tenantId: string, status: ActionState | undefined, page: PageInput) {
  const where: SQL[] = [eq(actions.tenantId, tenantId), eq(actions.reviewable, true)];
  if (status) where.push(eq(actions.status, status));
  const [found, [{ n }]] = await Promise.all([
    db.select().from(actions).where(and(...where)).orderBy(asc(actions.lastSeq)).limit(page.limit).offset(page.offset),
    db.select({ n: count() }).from(actions).where(and(...where)),
  ]);
  return { page: found, total: Number(n) };
}

/** Pending actions submitted before `before`, oldest first, of every tenant (maintenance). */
export async function stalePending(db: DbOrTx, before: Date, limit: number): Promise<{ id: string; tenantId: string }[]> {
  return db
    .select({ id: actions.id, tenantId: actions.tenantId })
    .from(actions)
    .where(and(eq(actions.status, 'pending_review'), lt(actions.submittedAt, before)))
    .orderBy(asc(actions.submittedAt))
    .limit(limit);
}

export async function saveSettings(db: DbOrTx, tenantId: string, s: ControlSettings, now: Date) {
  const values = {
    approvalMode: s.approval_mode,
    evaluationMode: s.evaluation_mode,
    minApprovals: s.min_approvals,
    requireManager: s.require_manager,
    allowedRoles: s.allowed_roles,
    updatedAt: now,
  };
  await db.insert(controlSettings).values({ tenantId, ...values }).onConflictDoUpdate({ target: controlSettings.tenantId, set: values });
}

export async function settingsRow(db: DbOrTx, tenantId: string) {
  const [row] = await db.select().from(controlSettings).where(eq(controlSettings.tenantId, tenantId));
  return row ?? null;
}
