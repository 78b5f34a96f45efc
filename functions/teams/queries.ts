import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import { teamInvitations, teamMembers, teams, tenants } from '../../schema';
import type { DbOrTx } from '../../shared/platform/data/db';
import type { PageInput } from '../../shared/platform/data/pagination';
import type { Role } from './roles';

export type TeamRow = typeof teams.$inferSelect;
export type MemberRow = typeof teamMembers.$inferSelect;

/**
 * The team as `tenantId` sees it: the team and the caller's role, or null when the caller is not a
 * member (so an outsider cannot tell a team it is not in from one that does not exist). `lock`
 * takes the team row FOR UPDATE, which serializes changes to one team.
 */
export async function teamOfMember(db: DbOrTx, tenantId: string, teamId: string, lock = false) {
  const query = db
    .select({ team: teams, role: teamMembers.role })
    .from(teams)
    .innerJoin(teamMembers, and(eq(teamMembers.teamId, teams.id), eq(teamMembers.tenantId, tenantId)))
    .where(eq(teams.id, teamId));
  const [found] = lock ? await query.for('update', { of: teams }) : await query;
  return found ?? null;
}

export function membersOf(db: DbOrTx, teamIds: string[]) {
  if (!teamIds.length) return Promise.resolve([] as MemberRow[]);
  return db.select().from(teamMembers).where(inArray(teamMembers.teamId, teamIds)).orderBy(asc(teamMembers.joinedAt), asc(teamMembers.tenantId));
}

/** The teams the tenant owns or belongs to, oldest first, and how many there are. */
export async function teamsOfMember(db: DbOrTx, tenantId: string, page: PageInput) {
  const mine = db.select({ id: teamMembers.teamId }).from(teamMembers).where(eq(teamMembers.tenantId, tenantId));
  const [found, [{ n }]] = await Promise.all([
    db.select().from(teams).where(inArray(teams.id, mine)).orderBy(asc(teams.createdAt), asc(teams.id)).limit(page.limit).offset(page.offset),
    db.select({ n: sql<number>`count(*)` }).from(teamMembers).where(eq(teamMembers.tenantId, tenantId)),
  ]);
  return { page: found, total: Number(n) };
}

export async function insertTeam(tx: DbOrTx, team: { id: string; ownerTenantId: string; name: string }, now: Date) {
  const [row] = await tx
    .insert(teams)
    .values({ ...team, createdAt: now, updatedAt: now })
    .returning();
  await tx.insert(teamMembers).values({ teamId: team.id, tenantId: team.ownerTenantId, role: 'owner', joinedAt: now });
  return row;
}

export async function renameTeam(tx: DbOrTx, teamId: string, name: string, now: Date) {
  const [row] = await tx.update(teams).set({ name, updatedAt: now }).where(eq(teams.id, teamId)).returning();
  return row;
}

export async function deleteTeam(tx: DbOrTx, ownerTenantId: string, teamId: string) {
  await tx.delete(teams).where(and(eq(teams.id, teamId), eq(teams.ownerTenantId, ownerTenantId)));
}

export async function memberOf(db: DbOrTx, teamId: string, tenantId: string) {
  const [row] = await db
    .select()
    .from(teamMembers)
    .where(and(eq(teamMembers.teamId, teamId), eq(teamMembers.tenantId, tenantId)));
  return row ?? null;
}

export async function setRole(tx: DbOrTx, teamId: string, tenantId: string, role: Role) {
  await tx
    .update(teamMembers)
    .set({ role })
    .where(and(eq(teamMembers.teamId, teamId), eq(teamMembers.tenantId, tenantId)));
}

export async function removeMember(tx: DbOrTx, teamId: string, tenantId: string) {
  await tx.delete(teamMembers).where(and(eq(teamMembers.teamId, teamId), eq(teamMembers.tenantId, tenantId)));
}

export async function insertInvitation(tx: DbOrTx, invitation: typeof teamInvitations.$inferInsert) {
  await tx.insert(teamInvitations).values(invitation);
}

/** An invitation with its team, locked so one invitation is spent once. */
export async function lockInvitation(tx: DbOrTx, id: string) {
  const [found] = await tx
    .select({ invitation: teamInvitations, team: teams })
    .from(teamInvitations)
    .innerJoin(teams, eq(teams.id, teamInvitations.teamId))
    .where(eq(teamInvitations.id, id))
    .for('update', { of: teamInvitations });
  return found ?? null;
}

/** Spends the invitation and adds the member (a member already in keeps the role they have). */
export async function acceptInvitation(tx: DbOrTx, invitation: { id: string; teamId: string; role: Role }, tenantId: string, now: Date) {
  await tx.update(teamInvitations).set({ usedAt: now, usedBy: tenantId }).where(eq(teamInvitations.id, invitation.id));
  await tx.insert(teamMembers).values({ teamId: invitation.teamId, tenantId, role: invitation.role, joinedAt: now }).onConflictDoNothing();
}

/** The tenant's e-mail if it is verified (only a verified address may accept an invitation). */
export async function verifiedEmailOf(db: DbOrTx, tenantId: string): Promise<string | null> {
  const [row] = await db.select({ email: tenants.email, verifiedAt: tenants.emailVerifiedAt }).from(tenants).where(eq(tenants.id, tenantId));
  return row?.verifiedAt ? row.email : null;
}
