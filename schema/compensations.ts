import { boolean, integer, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const PLAN_STATUSES = ['pending', 'in_progress', 'completed'] as const;
export const ACTION_STATUSES = ['pending', 'completed', 'failed', 'skipped'] as const;

export const compensationPlans = pgTable('compensation_plans', {
  id: text('id').primaryKey(),
  tenantId: text('tenant_id').notNull(),
  rollbackId: text('rollback_id'),
  rollbackFrom: ts('rollback_from').notNull(),
  rollbackTo: ts('rollback_to').notNull(),
  status: text('status', { enum: PLAN_STATUSES }).notNull(),
  actionCount: integer('action_count').notNull(),
  truncated: boolean('truncated').notNull(),
  createdBy: text('created_by'),
  createdAt: ts('created_at').notNull(),
  completedAt: ts('completed_at'),
});

export const compensationActions = pgTable(
  'compensation_actions',
  {
    planId: text('plan_id').notNull(),
    tenantId: text('tenant_id').notNull(),
    actionIndex: integer('action_index').notNull(),
    traceId: text('trace_id').notNull(),
    stepId: text('step_id').notNull(),
    stepIndex: integer('step_index').notNull(),
    agentId: text('agent_id'),
    stepContent: text('step_content').notNull(),
    stepMetadata: jsonb('step_metadata').$type<Record<string, unknown>>().notNull(),
    stepAt: ts('step_at').notNull(),
    suggested: text('suggested').notNull(),
    status: text('status', { enum: ACTION_STATUSES }).notNull(),
    detail: text('detail'),
    acknowledgedAt: ts('acknowledged_at'),
    acknowledgedBy: text('acknowledged_by'),
  },
  (t) => [primaryKey({ columns: [t.planId, t.actionIndex] })],
);
