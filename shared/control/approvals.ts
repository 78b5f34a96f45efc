import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import { actionDecisions, actions, teamMembers } from '../../schema';
import type { DbOrTx } from '../platform/db';

/** The SQL of approval decisions, shared by the actions family and runtime interventions. */
export type ActionRow = typeof actions.$inferSelect;
export type DecisionRow = typeof actionDecisions.$inferSelect;
export type TeamRole = (typeof teamMembers.$inferSelect)['role'];

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

