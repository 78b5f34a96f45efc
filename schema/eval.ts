import { boolean, index, integer, jsonb, pgTable, real, text, timestamp } from 'drizzle-orm/pg-core';
import { tenants } from './accounts';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export interface EvalBreakdown {
  recall_consistency: number;
  drift_score: number;
  conflict_score: number;
  staleness_score: number;
}

/** One eval run (migrations/0020): history, daily run limits. */
export const evalRuns = pgTable(
  'eval_runs',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    healthScore: integer('health_score').notNull(),
    breakdown: jsonb('breakdown').$type<EvalBreakdown>().notNull(),
    memoryCount: integer('memory_count').notNull(),
    conflictCount: integer('conflict_count').notNull(),
    staleCount: integer('stale_count').notNull(),
    minScore: real('min_score'),
    passed: boolean('passed'),
    driftDetail: jsonb('drift_detail').$type<Record<string, unknown>>(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('eval_runs_tenant_idx').on(t.tenantId, t.createdAt.desc(), t.id.desc()), index('eval_runs_created_idx').on(t.createdAt)],
);

/** A query with the observation a search of it should find (drives recall_consistency). */
export const evalBaselines = pgTable(
  'eval_baselines',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    query: text('query').notNull(),
    expectedObservation: text('expected_observation').notNull(),
    expectedScore: real('expected_score'),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('eval_baselines_tenant_idx').on(t.tenantId, t.createdAt, t.id)],
);
