import { z } from '@hono/zod-openapi';
import { PageQuery, paging } from '../../shared/platform/data/pagination';
import { PrefixedId } from '../../shared/platform/contract/params';
import type { MemberRow, TeamRow } from './queries';
import { INVITABLE_ROLES, PERMISSIONS, ROLES } from './roles';

export const MAX_NAME = 100;
const TEAM_EXAMPLE = 'team_4f9Qw2b8Zr1LmT0aXcVe3K';
const TENANT_EXAMPLE = 'ten_2aB9xQ7mLp0cRt5VwZ1yK8';
const Name = z
  .string()
  .trim()
  .min(1)
  .max(MAX_NAME)
  .openapi({ description: `1 to ${MAX_NAME} characters`, example: 'Support agents' });

export const CreateTeamBody = z.object({ name: Name }).openapi('CreateTeamRequest', { example: { name: 'Support agents' } });
export const RenameTeamBody = z.object({ name: Name }).openapi('RenameTeamRequest', { example: { name: 'Support and billing agents' } });
export const InviteBody = z
  .object({
    email: z.email().max(254).openapi({ description: 'Only a tenant whose verified e-mail is this address can join', example: 'grace@example.com' }),
    role: z.enum(INVITABLE_ROLES).default('member').openapi({ description: '`admin`, `member` (default) or `readonly`; `owner` is not invitable' }),
  })
  .openapi('TeamInviteRequest', { example: { email: 'grace@example.com', role: 'member' } });
export const JoinBody = z
  .object({ invitation_id: PrefixedId('invitation', 'The invitation id from the invitation mail') })
  .openapi('TeamJoinRequest', { example: { invitation_id: 'inv_4f9Qw2b8Zr1LmT0aXcVe3K' } });
export const RoleBody = z
  .object({ role: z.enum(INVITABLE_ROLES).openapi({ description: '`admin`, `member` or `readonly`', example: 'readonly' }) })
  .openapi('TeamRoleRequest', { example: { role: 'readonly' } });

export const TeamParams = z.object({ team_id: PrefixedId('team', 'The team') });
export const MemberParams = TeamParams.extend({ tenant_id: PrefixedId('tenant', 'The member tenant') });
export const ListQuery = PageQuery({ max: 100, default: 100 });
export const ListPaging = paging({ totals: ['total_count'], hasMore: true });

const Member = z.object({
  tenant_id: z.string().openapi({ example: TENANT_EXAMPLE }),
  role: z.enum(ROLES).openapi({ example: 'member' }),
  joined_at: z.string().openapi({ example: '2026-11-01T10:00:00.000Z' }),
});

export const TeamSchema = z
  .object({
    team_id: z.string().openapi({ example: TEAM_EXAMPLE }),
    name: z.string().openapi({ example: 'Support agents' }),
    owner_tenant_id: z.string().openapi({ example: TENANT_EXAMPLE }),
    members: z.array(Member).openapi({
      description: 'The whole roster for the owner and admins; a member or readonly member sees itself and the owner (member_count counts everyone)',
    }),
    member_count: z.number().int().openapi({ example: 3 }),
    created_at: z.string().openapi({ example: '2026-11-01T10:00:00.000Z' }),
    updated_at: z.string().openapi({ example: '2026-11-01T10:00:00.000Z' }),
  })
  .openapi('Team');

export const TeamList = z.object({ teams: z.array(TeamSchema), ...ListPaging.fields }).openapi('TeamList');

export const InviteResponse = z
  .object({
    invitation_id: z.string().openapi({ example: 'inv_4f9Qw2b8Zr1LmT0aXcVe3K' }),
    team_id: z.string().openapi({ example: TEAM_EXAMPLE }),
    email: z.string().openapi({ example: 'grace@example.com' }),
    role: z.enum(INVITABLE_ROLES).openapi({ example: 'member' }),
    expires_at: z.string().openapi({ example: '2026-11-08T10:00:00.000Z' }),
    message: z.string().openapi({ example: 'Invitation sent to grace@example.com; it expires in 7 days.' }),
  })
  .openapi('TeamInvitation');

export const JoinResponse = z
  .object({
    team_id: z.string().openapi({ example: TEAM_EXAMPLE }),
    team_name: z.string().openapi({ example: 'Support agents' }),
    role: z.enum(ROLES).openapi({ example: 'member' }),
    message: z.string().openapi({ example: 'You joined Support agents as member.' }),
  })
  .openapi('TeamJoinResponse');

/**
 * The team as `viewer` sees it. Those who manage members (owner, admin) see the whole roster; a
 * member or readonly member sees itself and the owner, and how many members there are, so joining a
 * team does not hand every member the tenant ids of all the others.
 */
export function toTeamDto(team: TeamRow, members: MemberRow[], viewer: string): z.infer<typeof TeamSchema> {
  const role = members.find((m) => m.tenantId === viewer)?.role;
  const managers: readonly string[] = PERMISSIONS.change_role;
  const shown = role && managers.includes(role) ? members : members.filter((m) => m.tenantId === viewer || m.role === 'owner');
  return {
    team_id: team.id,
    name: team.name,
    owner_tenant_id: team.ownerTenantId,
    members: shown.map((m) => ({ tenant_id: m.tenantId, role: m.role, joined_at: m.joinedAt.toISOString() })),
    member_count: members.length,
    created_at: team.createdAt.toISOString(),
    updated_at: team.updatedAt.toISOString(),
  };
}
