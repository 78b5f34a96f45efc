import { sql } from 'drizzle-orm';
import { bigint, boolean, doublePrecision, index, integer, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/** Every status an action moves through (docs/architecture.md#approvals). */
export const ACTION_STATES = ['allowed', 'blocked', 'pending_review', 'approved', 'denied', 'executed', 'failed'] as const;
export type ActionState = (typeof ACTION_STATES)[number];

/** The rules of an approval as they stood when the action was submitted. */
export interface ApprovalRules {
  min_approvals: number;
  require_manager: boolean;
  allowed_roles: string[];
}

/** Governed actions (migrations/0018); `id` is both the action id and the approval id. */
export const actions = pgTable(
  'actions',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    agentId: text('agent_id'),
    action: text('action').notNull(),
    connector: text('connector'),
    operation: text('operation').notNull(),
    params: jsonb('params').$type<Record<string, unknown>>().notNull(),
    status: text('status', { enum: ACTION_STATES }).notNull(),
    outcome: text('outcome', { enum: ['allowed', 'blocked', 'pending_review'] }).notNull(),
    evaluationMode: text('evaluation_mode', { enum: ['enforcement', 'shadow'] }).notNull(),
    approvalMode: text('approval_mode', { enum: ['solo', 'team', 'enterprise'] }),
    approvalRules: jsonb('approval_rules').$type<ApprovalRules>(),
    policyResult: jsonb('policy_result').$type<Record<string, unknown>>().notNull(),
    riskScore: doublePrecision('risk_score'),
    violationCount: integer('violation_count').notNull(),
    reviewable: boolean('reviewable').notNull(),
    submittedAt: ts('submitted_at').notNull(),
    submittedBy: text('submitted_by'),
    decidedAt: ts('decided_at'),
    reason: text('reason'),
    resultDetail: jsonb('result_detail').$type<unknown>(),
    resultAt: ts('result_at'),
    lastSeq: bigint('last_seq', { mode: 'number' }).notNull(),
  },
  (t) => [
    index('actions_queue_idx').on(t.tenantId, t.lastSeq).where(sql`reviewable`),
    index('actions_queue_status_idx').on(t.tenantId, t.status, t.lastSeq).where(sql`reviewable`),
    index('actions_pending_idx').on(t.submittedAt).where(sql`status = 'pending_review'`),
    index('actions_submitted_idx').on(t.tenantId, t.submittedAt),
    index('actions_agent_idx').on(t.tenantId, t.agentId, t.submittedAt),
  ],
);

/** One decision on an action; the approver may be another tenant of a shared team. */
export const actionDecisions = pgTable(
  'action_decisions',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    actionId: text('action_id').notNull(),
    approverTenantId: text('approver_tenant_id').notNull(),
    approverKeyId: text('approver_key_id'),
    approverId: text('approver_id').notNull(),
    approverRole: text('approver_role'),
    decision: text('decision', { enum: ['approve', 'deny'] }).notNull(),
    reason: text('reason'),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('action_decisions_action_idx').on(t.actionId, t.createdAt)],
);

/** A tenant's approval and evaluation settings; no row means DEFAULT_CONTROL_SETTINGS. */
export const controlSettings = pgTable('control_settings', {
  tenantId: text('tenant_id').primaryKey(),
  approvalMode: text('approval_mode', { enum: ['solo', 'team', 'enterprise'] }).notNull(),
  evaluationMode: text('evaluation_mode', { enum: ['enforcement', 'shadow'] }).notNull(),
  minApprovals: integer('min_approvals').notNull(),
  requireManager: boolean('require_manager').notNull(),
  allowedRoles: text('allowed_roles').array().notNull(),
  /** The built-in MemoryInjection policy is on (migrations/0043). */
  memoryGuard: boolean('memory_guard').notNull().default(false),
  updatedAt: ts('updated_at').notNull(),
});

/**
 * Memory writes a policy holds for review (migrations/0043, docs/governed-memories.md): outside the
 * memories table so no read path sees them. `id` is the memory id on approval and the approval id.
 */
export const memoryHolds = pgTable(
  'memory_holds',
  {
    id: uuid('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    keyId: text('key_id').notNull(),
    restriction: jsonb('restriction').$type<{ scopes: string[]; agentId: string | null; spaceIds: string[] | null } | null>(),
    agentId: text('agent_id'),
    input: jsonb('input').$type<Record<string, unknown>>().notNull(),
    source: jsonb('source').$type<Record<string, unknown>>().notNull(),
    trust: text('trust', { enum: ['verified', 'agent', 'external'] }).notNull(),
    policyResult: jsonb('policy_result').$type<Record<string, unknown>>().notNull(),
    riskScore: doublePrecision('risk_score'),
    approvalMode: text('approval_mode', { enum: ['solo', 'team', 'enterprise'] }).notNull(),
    /** The approval rules as they stood when it was held (migrations/0048). */
    approvalRules: jsonb('approval_rules').$type<ApprovalRules>(),
    /** The decisions taken on it so far (enterprise mode collects several; migrations/0048). */
    decisions: jsonb('decisions')
      .$type<
        {
          approverTenantId: string;
          approverKeyId: string | null;
          approverId: string;
          approverRole: string | null;
          decision: 'approve' | 'deny';
          reason: string | null;
          createdAt: string;
        }[]
      >()
      .notNull()
      .default(sql`'[]'::jsonb`),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('memory_holds_tenant_idx').on(t.tenantId, t.createdAt, t.id)],
);
