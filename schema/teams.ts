import { pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/** Teams, their members and invitations (migrations/0010). */
export const teams = pgTable('teams', {
  id: text('id').primaryKey(),
  ownerTenantId: text('owner_tenant_id').notNull(),
  name: text('name').notNull(),
  createdAt: ts('created_at').notNull(),
  updatedAt: ts('updated_at').notNull(),
});

export const teamMembers = pgTable(
  'team_members',
  {
    teamId: text('team_id').notNull(),
    tenantId: text('tenant_id').notNull(),
    role: text('role', { enum: ['owner', 'admin', 'member', 'readonly'] }).notNull(),
    joinedAt: ts('joined_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.teamId, t.tenantId] })],
);

export const teamInvitations = pgTable('team_invitations', {
  id: text('id').primaryKey(),
  teamId: text('team_id').notNull(),
  email: text('email').notNull(),
  role: text('role', { enum: ['admin', 'member', 'readonly'] }).notNull(),
  invitedBy: text('invited_by'),
  createdAt: ts('created_at').notNull(),
  expiresAt: ts('expires_at').notNull(),
  usedAt: ts('used_at'),
  usedBy: text('used_by'),
});
