import { boolean, doublePrecision, index, integer, jsonb, pgTable, primaryKey, real, text, timestamp, uuid } from 'drizzle-orm/pg-core';
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

/** A memory's probe of the near-duplicate index (migrations/0025): stale when its hash or space differs. */
export const memoryNeighbourProbes = pgTable(
  'memory_neighbour_probes',
  {
    memoryId: uuid('memory_id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    contentHash: text('content_hash').notNull(),
    spaceId: uuid('space_id'),
    probedAt: ts('probed_at').notNull(),
  },
  // A tenant's latest probe: maintenance serves the tenant served longest ago first (migrations/0029).
  (t) => [index('memory_neighbour_probes_tenant_idx').on(t.tenantId, t.probedAt)],
);

/** Near-duplicate pairs in a space (cosine ≥ 0.5), found by the probe of `memoryId` (migrations/0025). */
export const memoryNeighbours = pgTable(
  'memory_neighbours',
  {
    memoryId: uuid('memory_id').notNull(),
    neighbourId: uuid('neighbour_id').notNull(),
    tenantId: text('tenant_id').notNull(),
    distance: doublePrecision('distance').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.memoryId, t.neighbourId] }),
    index('memory_neighbours_neighbour_idx').on(t.neighbourId),
    index('memory_neighbours_tenant_idx').on(t.tenantId, t.distance),
  ],
);
