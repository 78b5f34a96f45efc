import { boolean, index, integer, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { sql } from 'drizzle-orm';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const tenants = pgTable(
  'tenants',
  {
    id: text('id').primaryKey(),
    email: text('email').notNull(),
    tier: text('tier', { enum: ['free', 'starter', 'pro', 'enterprise'] }).notNull(),
    emailVerifiedAt: ts('email_verified_at'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
    /** The tenant's number, never reused: the key of its keyword postings (migrations/0053). */
    tenantNo: integer('tenant_no').generatedAlwaysAsIdentity().unique(),
  },
  (t) => [uniqueIndex('tenants_email_key').on(sql`lower(${t.email})`)],
);

export const apiKeys = pgTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    keyHash: text('key_hash').notNull().unique(),
    keyPrefix: text('key_prefix').notNull(),
    status: text('status', { enum: ['active', 'grace', 'revoked'] }).notNull(),
    createdAt: ts('created_at').notNull(),
    expiresAt: ts('expires_at'),
    graceExpiresAt: ts('grace_expires_at'),
    revokedAt: ts('revoked_at'),
    replacedBy: text('replaced_by'),
    /** A restricted key (POST /v1/keys/restricted): `scopes` is set, and `agent_id`/`space_ids` may confine it. */
    restricted: boolean('restricted').notNull().default(false),
    name: text('name'),
    scopes: text('scopes').array(),
    agentId: text('agent_id'),
    spaceIds: uuid('space_ids').array(),
  },
  (t) => [index('api_keys_tenant_idx').on(t.tenantId, t.createdAt)],
);

export const signupTokens = pgTable('signup_tokens', {
  id: text('id').primaryKey(),
  tenantId: text('tenant_id').notNull(),
  tokenHash: text('token_hash').notNull().unique(),
  expiresAt: ts('expires_at').notNull(),
  usedAt: ts('used_at'),
  createdAt: ts('created_at').notNull(),
});

export const signupAttempts = pgTable('signup_attempts', {
  ipHash: text('ip_hash').notNull(),
  createdAt: ts('created_at').notNull(),
});

export const mailOutbox = pgTable('mail_outbox', {
  id: text('id').primaryKey(),
  toEmail: text('to_email').notNull(),
  subject: text('subject').notNull(),
  body: text('body').notNull(),
  token: text('token'),
  createdAt: ts('created_at').notNull(),
});
