import { sql } from 'drizzle-orm';
import { bigint, boolean, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/** Custom policies, one row per (tenant, name, scope); `agent_id` null is tenant-wide (migrations/0017). */
export const policies = pgTable(
  'policies',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    name: text('name').notNull(),
    agentId: text('agent_id'),
    description: text('description'),
    stepTypes: text('step_types').array().notNull(),
    whitelistedDomains: text('whitelisted_domains').array().notNull(),
    rules: jsonb('rules').$type<Record<string, unknown>[]>().notNull(),
    enabled: boolean('enabled').notNull(),
    version: integer('version').notNull(),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('policies_scope_idx').on(t.tenantId, t.name, sql`(coalesce(${t.agentId}, ''))`),
    index('policies_enabled_idx').on(t.tenantId, t.agentId).where(sql`enabled`),
  ],
);

/**
 * Per tenant, the version of what its memory policies are judged from (its policies and control
 * settings): a new one from a sequence on every change, set by triggers at commit (migrations/0051).
 * No row reads as 0. A store checks it in its transaction against the version it judged with.
 */
export const governanceVersions = pgTable('governance_versions', {
  tenantId: text('tenant_id').primaryKey(),
  version: bigint('version', { mode: 'number' }).notNull(),
});
