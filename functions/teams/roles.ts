import { forbidden } from '../../shared/platform/contract/errors';

export const ROLES = ['owner', 'admin', 'member', 'readonly'] as const;
export type Role = (typeof ROLES)[number];
/** Roles an invitation or a role change may give: there is one owner, the team's creator. */
export const INVITABLE_ROLES = ['admin', 'member', 'readonly'] as const;

/** Who may do what: the one table (docs/teams-and-webhooks.md#roles shows the same). Any member may read the team. */
export const PERMISSIONS = {
  read: ['owner', 'admin', 'member', 'readonly'],
  rename: ['owner', 'admin'],
  delete: ['owner'],
  invite: ['owner', 'admin'],
  change_role: ['owner', 'admin'],
  remove_member: ['owner', 'admin'],
} as const satisfies Record<string, readonly Role[]>;
export type Action = keyof typeof PERMISSIONS;

/** 403 FORBIDDEN for a member whose role may not do `action` (an outsider never gets here: 404). */
export function requireRole(role: Role, action: Action): void {
  if (!(PERMISSIONS[action] as readonly Role[]).includes(role)) {
    throw forbidden(`Your role in this team (${role}) may not ${action.replace('_', ' ')}; it needs ${PERMISSIONS[action].join(' or ')}`);
  }
}
