import { boolean, index, integer, jsonb, pgTable, real, text, timestamp } from 'drizzle-orm/pg-core';
import { sql } from 'drizzle-orm';
import { tenants } from './accounts';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/** Per-tenant Cortex config and the last run's stats (migrations/0021). No row = the defaults. */
export const cortexConfigs = pgTable(
  'cortex_configs',
  {
    tenantId: text('tenant_id')
      .primaryKey()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    enabled: boolean('enabled').notNull().default(false),
    consolidationEnabled: boolean('consolidation_enabled').notNull().default(true),
    consolidationThreshold: real('consolidation_threshold').notNull().default(0.9),
    reinforcementEnabled: boolean('reinforcement_enabled').notNull().default(true),
    decayEnabled: boolean('decay_enabled').notNull().default(true),
    decayAgeDays: integer('decay_age_days').notNull().default(30),
    insightGenerationEnabled: boolean('insight_generation_enabled').notNull().default(false),
    lastRunAt: ts('last_run_at'),
    runStats: jsonb('run_stats').$type<Record<string, unknown>>().notNull().default({}),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('cortex_configs_enabled_idx').on(t.lastRunAt).where(sql`enabled`)],
);
