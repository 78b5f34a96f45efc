import { and, asc, eq, type SQL } from 'drizzle-orm';
import { sql } from '../platform/data/db';
import { actionDecisions, actions, teamMembers } from '../../schema';
import { type DbOrTx, pgArray, rows } from '../platform/data/db';

/** The SQL of approval decisions, shared by the actions family and runtime interventions. */
export type ActionRow = typeof actions.$inferSelect;
export type DecisionRow = typeof actionDecisions.$inferSelect;
export type NewDecision = typeof actionDecisions.$inferInsert;
export type TeamRole = (typeof teamMembers.$inferSelect)['role'];

/** Roles that put a tenant's team- and enterprise-mode actions before a team: not `readonly`. */
export const SUBMITTER_ROLES = ['owner', 'admin', 'member'] as const;

/**
 * The one rule of who reviews whose actions, as SQL: the team memberships of `reviewer` (alias
 * `reviewer`, any role) in the submitter's approval teams, the teams where the submitter is owner,
 * admin or member. Joining someone else's team as `readonly` puts nothing of one's own before that
 * team. Listing (the review queue), finding an approval to decide and the decider's role all read it.
 */
export const reviewerMemberships = (submitterTenantId: SQL | string, reviewerTenantId: string) => sql`
  SELECT reviewer.role FROM team_members submitter JOIN team_members reviewer ON reviewer.team_id = submitter.team_id
  WHERE submitter.tenant_id = ${submitterTenantId} AND submitter.role = ANY(${pgArray(SUBMITTER_ROLES)}::text[])
    AND reviewer.tenant_id = ${reviewerTenantId}`;

/**
 * A pending-or-decided approval that `deciderTenantId` may see: one of its own, or, when the action
 * was submitted in team or enterprise mode, one of a submitter whose approval team it is in (see
 * reviewerMemberships; checked here, in the query, so anyone else's lookup finds nothing, as for an
 * unknown id). Locked FOR UPDATE: concurrent decisions on one action run one after another.
 */
export async function approvalFor(db: DbOrTx, deciderTenantId: string, actionId: string): Promise<ActionRow | null> {
  const reviews = sql`EXISTS (${reviewerMemberships(sql`${actions.tenantId}`, deciderTenantId)})`;
  const [found] = await db
    .select()
    .from(actions)
    .where(
      and(
        eq(actions.id, actionId),
        eq(actions.reviewable, true),
        sql`(${actions.tenantId} = ${deciderTenantId} OR (${actions.approvalMode} IN ('team', 'enterprise') AND ${reviews}))`,
      ),
    )
    .for('update');
  return found ?? null;
}

/**
 * The roles `deciderTenantId` holds in the approval teams of `submitterTenantId` (for the submitter
 * itself: its roles in its own approval teams).
 */
export async function reviewerRoles(db: DbOrTx, submitterTenantId: string, deciderTenantId: string): Promise<TeamRole[]> {
  const found = await rows<{ role: TeamRole }>(db, reviewerMemberships(submitterTenantId, deciderTenantId));
  return [...new Set(found.map((r) => r.role))];
}

export async function decisionsOf(db: DbOrTx, tenantId: string, actionId: string): Promise<DecisionRow[]> {
  return db
    .select()
    .from(actionDecisions)
    .where(and(eq(actionDecisions.tenantId, tenantId), eq(actionDecisions.actionId, actionId)))
    .orderBy(asc(actionDecisions.createdAt), asc(actionDecisions.id));
}

export async function insertDecision(db: DbOrTx, row: NewDecision) {
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
