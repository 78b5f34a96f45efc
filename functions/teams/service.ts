import type { z } from '@hono/zod-openapi';
import { sendMail } from '../../shared/jobs/mail';
import { normalizeEmail } from '../../shared/platform/data/accounts';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { AppError, forbidden, notFound } from '../../shared/platform/contract/errors';
import { newId } from '../../shared/platform/contract/ids';
import type { PageInput } from '../../shared/platform/data/pagination';
import { DAY } from '../../shared/platform/contract/time';
import { type Work, write } from '../../shared/platform/data/unit-of-work';
import * as q from './queries';
import { type Action, PERMISSIONS, type Role, requireRole } from './roles';
import { type InviteBody, ListPaging, toTeamDto } from './schemas';

export const INVITATION_TTL_MS = 7 * DAY;

const invalidInvitation = (why: string) => new AppError('INVALID_TOKEN', `Team invitation ${why}`);

/**
 * The team the caller is in, with its role, after the permission check: an outsider gets 404 (it
 * cannot tell a team it is not in from one that does not exist), a member without the role 403.
 */
async function teamFor(ctx: TenantCtx, teamId: string, action: Action, lock = false) {
  const found = await q.teamOfMember(ctx.db, ctx.tenantId, teamId, lock);
  if (!found) throw notFound('Team');
  requireRole(found.role, action);
  return found;
}

async function teamDto(ctx: TenantCtx, team: q.TeamRow) {
  return toTeamDto(team, await q.membersOf(ctx.db, [team.id]), ctx.tenantId);
}

/** Every change to a team is in its owner's audit chain, whoever made it. */
const teamAudit = (work: Work, team: q.TeamRow, operation: string, metadata: Record<string, unknown> = {}) =>
  work.audit({
    tenantId: team.ownerTenantId,
    operation,
    resourceType: 'team',
    resourceId: team.id,
    metadata: { by_tenant_id: work.ctx.auth?.tenantId, ...metadata },
  });

export async function createTeam(ctx: TenantCtx, input: { name: string }) {
  return write(ctx, async (work) => {
    const team = await q.insertTeam(work.tx, { id: newId('team'), ownerTenantId: ctx.tenantId, name: input.name }, ctx.now);
    await teamAudit(work, team, 'team.created', { name: input.name });
    await work.milestone('first_team', { team_id: team.id });
    return teamDto(work.ctx, team);
  });
}

export async function listTeams(ctx: TenantCtx, page: PageInput) {
  const { page: found, total } = await q.teamsOfMember(ctx.db, ctx.tenantId, page);
  const members = await q.membersOf(
    ctx.db,
    found.map((t) => t.id),
  );
  const teams = found.map((t) =>
    toTeamDto(
      t,
      members.filter((m) => m.teamId === t.id),
      ctx.tenantId,
    ),
  );
  return { teams, ...ListPaging.meta(total, page, found.length) };
}

export async function getTeam(ctx: TenantCtx, input: { teamId: string }) {
  return teamDto(ctx, (await teamFor(ctx, input.teamId, 'read')).team);
}

export async function renameTeam(ctx: TenantCtx, input: { teamId: string; name: string }) {
  return write(ctx, async (work) => {
    const { team } = await teamFor(work.ctx, input.teamId, 'rename', true);
    const renamed = await q.renameTeam(work.tx, team.id, input.name, ctx.now);
    await teamAudit(work, team, 'team.renamed', { from: team.name, to: input.name });
    return teamDto(work.ctx, renamed);
  });
}

export async function deleteTeam(ctx: TenantCtx, input: { teamId: string }) {
  await write(ctx, async (work) => {
    const { team } = await teamFor(work.ctx, input.teamId, 'delete', true);
    await q.deleteTeam(work.tx, ctx.tenantId, team.id);
    await teamAudit(work, team, 'team.deleted', { name: team.name });
  });
}

/** Mails a single-use invitation bound to the address; the answer is the same whether or not the address has an account. */
export async function invite(ctx: TenantCtx, input: { teamId: string } & z.infer<typeof InviteBody>) {
  const email = normalizeEmail(input.email);
  return write(ctx, async (work) => {
    const { team } = await teamFor(work.ctx, input.teamId, 'invite', true);
    const invitation = {
      id: newId('invitation'),
      teamId: team.id,
      email,
      role: input.role,
      invitedBy: ctx.tenantId,
      createdAt: ctx.now,
      expiresAt: new Date(ctx.now.getTime() + INVITATION_TTL_MS),
    };
    await q.insertInvitation(work.tx, invitation);
    await sendMail(work, {
      to: email,
      subject: `You are invited to the team "${team.name}" on engram`,
      text: `${ctx.auth.email} invited you to the team "${team.name}" as ${input.role}.\n\nJoin with the engram account registered to this address before ${invitation.expiresAt.toISOString()}:\nPOST /v1/teams/join with {"invitation_id": "${invitation.id}"}.`,
      token: invitation.id,
    });
    await teamAudit(work, team, 'team.invited', { invitation_id: invitation.id, email, role: input.role });
    return {
      invitation_id: invitation.id,
      team_id: team.id,
      email,
      role: input.role,
      expires_at: invitation.expiresAt.toISOString(),
      message: `Invitation sent to ${email}; it expires in 7 days.`,
    };
  });
}

/**
 * Spends an invitation: only the tenant whose verified e-mail it was sent to, once, within 7 days,
 * and only while whoever sent it may still invite (an admin who was removed or demoted cannot let
 * anyone in through an invitation sent before). An invitation sent to someone else answers exactly
 * as an id that names nothing, so the answer does not tell that it exists.
 */
export async function join(ctx: TenantCtx, input: { invitation_id: string }) {
  return write(ctx, async (work) => {
    const found = await q.lockInvitation(work.tx, input.invitation_id);
    const email = found && (await q.verifiedEmailOf(work.tx, ctx.tenantId));
    if (!found || !email || normalizeEmail(email) !== found.invitation.email)
      throw invalidInvitation('is invalid, or was not sent to the verified e-mail address of this account');
    const { invitation, team } = found;
    if (invitation.usedAt) throw invalidInvitation('has already been used');
    if (invitation.expiresAt <= ctx.now) throw invalidInvitation('has expired');
    const inviter = invitation.invitedBy ? await q.memberOf(work.tx, team.id, invitation.invitedBy) : null;
    const inviters: readonly Role[] = PERMISSIONS.invite;
    if (!inviter || !inviters.includes(inviter.role)) throw invalidInvitation('is no longer valid: whoever sent it may no longer invite to this team');
    const already = await q.memberOf(work.tx, team.id, ctx.tenantId);
    await q.acceptInvitation(work.tx, { id: invitation.id, teamId: team.id, role: invitation.role }, ctx.tenantId, ctx.now);
    const role: Role = already?.role ?? invitation.role;
    await teamAudit(work, team, 'team.joined', { invitation_id: invitation.id, tenant_id: ctx.tenantId, role });
    return {
      team_id: team.id,
      team_name: team.name,
      role,
      message: already ? `You were already in ${team.name} as ${role}.` : `You joined ${team.name} as ${role}.`,
    };
  });
}

/** The owner cannot be demoted, removed, or replaced through a role change (there is one owner). */
async function memberToChange(work: Work<TenantCtx>, team: q.TeamRow, tenantId: string) {
  const member = await q.memberOf(work.tx, team.id, tenantId);
  if (!member) throw notFound('Team member');
  if (member.role === 'owner') throw forbidden('The owner of a team cannot be demoted or removed');
  return member;
}

export async function changeRole(ctx: TenantCtx, input: { teamId: string; tenantId: string; role: Role }) {
  return write(ctx, async (work) => {
    const { team } = await teamFor(work.ctx, input.teamId, 'change_role', true);
    const member = await memberToChange(work, team, input.tenantId);
    await q.setRole(work.tx, team.id, input.tenantId, input.role);
    await teamAudit(work, team, 'team.role_changed', { tenant_id: input.tenantId, from: member.role, to: input.role });
    return teamDto(work.ctx, team);
  });
}

/** Removing a member ends what membership gave at once (the next request sees it). */
export async function removeMember(ctx: TenantCtx, input: { teamId: string; tenantId: string }) {
  await write(ctx, async (work) => {
    const { team } = await teamFor(work.ctx, input.teamId, 'remove_member', true);
    const member = await memberToChange(work, team, input.tenantId);
    await q.removeMember(work.tx, team.id, input.tenantId);
    await teamAudit(work, team, 'team.member_removed', { tenant_id: input.tenantId, role: member.role });
  });
}
