import { z } from '@hono/zod-openapi';
import { ACTION_STATES } from '../../../schema/actions';
import { APPROVAL_MODES, CONNECTORS, EVALUATION_MODES } from '../../../shared/control/types';
import { PageQuery, paging } from '../../../shared/platform/data/pagination';
import { ACTION_ID, PolicyResultSchema, TIME, Violation } from './actions';

// Explain, dashboard, violations ---------------------------------------------------------------

const ApprovalDecisionRecord = z.object({
  decision: z.enum(['approve', 'deny']),
  approver_id: z.string().openapi({ example: 'cfo@example.com' }),
  approver_tenant_id: z.string().openapi({ example: 'ten_2aB9xQ7mLp0cRt5VwZ1yK8' }),
  decided_by_key_id: z.string().nullable().openapi({
    description: 'The key that recorded the decision (null for a decision recorded before keys were named)',
    example: 'key_2aB9xQ7mLp0cRt5VwZ1yK8',
  }),
  approver_role: z
    .string()
    .nullable()
    .openapi({ description: "The approver's best role in a team shared with the submitter (team and enterprise modes)", example: 'admin' }),
  reason: z.string().nullable().openapi({ example: 'Vendor confirmed by phone' }),
  created_at: z.string().openapi({ example: TIME }),
});

const ApprovalRecord = z
  .object({
    approval_id: z.string().openapi({ example: ACTION_ID }),
    status: z.enum(ACTION_STATES),
    approval_mode: z.enum(APPROVAL_MODES),
    approvals_required: z.number().int().openapi({ example: 1 }),
    decided_at: z.string().nullable().openapi({ example: TIME }),
    reason: z.string().nullable().openapi({ example: 'Vendor confirmed by phone' }),
    decisions: z.array(ApprovalDecisionRecord),
  })
  .openapi('ApprovalRecord');

const PastMemory = z.object({
  memory_id: z.string().openapi({ example: 'urn:uuid:01935f6e-8a2b-7c3d-9e4f-5a6b7c8d9e0f' }),
  observation: z.string().openapi({ example: 'Vendor ACME GmbH is paid by wire, IBAN on file.' }),
  importance: z.number().int().openapi({ example: 7 }),
  tags: z.array(z.string()).openapi({ example: ['vendors'] }),
  created_at: z.string().openapi({ example: '2026-11-01T09:00:00.000Z' }),
});

const TrailEntry = z.object({
  sequence_number: z.number().int().openapi({ example: 42 }),
  timestamp: z.string().openapi({ example: TIME }),
  event: z.string().openapi({ example: 'action.pending_review' }),
  entry_hash: z.string().openapi({ example: 'a3f1c2d4e5b60718293a4b5c6d7e8f9012a3b4c5d6e7f8091a2b3c4d5e6f7081' }),
  actor: z.string().nullable().openapi({ example: 'key_4f9Qw2b8Zr1LmT0aXcVe3K' }),
  metadata: z.record(z.string(), z.unknown()).openapi({ example: { status: 'pending_review', triggered_policy: 'FinancialSafetyPolicy' } }),
});

export const MAX_EXPLAIN_MEMORIES = 100;
/** How far before its submission a recall by the submitting key counts as one made for the action. */
export const RECALL_WINDOW_MINUTES = 15;
export const MAX_RECALLED_MEMORIES = 10;

const RecalledMemory = PastMemory.extend({
  recalled_at: z.string().openapi({ description: 'The latest recall of it in the window', example: '2026-11-15T11:59:40.000Z' }),
  query: z.string().nullable().openapi({ description: 'What that recall searched for', example: 'how is ACME paid' }),
  recalls: z.number().int().openapi({ description: 'How many times the key recalled it in the window', example: 1 }),
}).openapi('RecalledMemory');

export const ExplainResponse = z
  .object({
    action_id: z.string().openapi({ example: ACTION_ID }),
    action: z.string().openapi({ example: 'http.post' }),
    agent_id: z.string().nullable().openapi({ example: 'billing-agent' }),
    connector: z.enum(CONNECTORS).nullable(),
    operation: z.string().openapi({ example: 'post' }),
    status: z.enum(ACTION_STATES),
    submitted_at: z.string().openapi({ example: TIME }),
    params: z.record(z.string(), z.unknown()).openapi({ example: { url: 'https://bank.example/wire', amount: 250000 } }),
    policy_result: PolicyResultSchema,
    approval: ApprovalRecord.nullable().openapi({ description: 'null when the action was never pending review' }),
    memories_at_time: z
      .array(PastMemory)
      .nullable()
      .openapi({ description: `The tenant's memories as they were at submitted_at (replay), newest first, at most ${MAX_EXPLAIN_MEMORIES}` }),
    memories_at_time_total: z.number().int().openapi({ description: 'How many memories the tenant had then', example: 12 }),
    memories_recalled: z.array(RecalledMemory).openapi({
      description: `The memories the key that submitted the action recalled in the ${RECALL_WINDOW_MINUTES} minutes before it, each as it was when recalled, most recently recalled first, at most ${MAX_RECALLED_MEMORIES}: what the agent had looked up before asking`,
    }),
    audit_trail: z.array(TrailEntry),
    summary: z.string().openapi({
      example:
        'Agent billing-agent asked to run http.post on 2026-11-15T12:00:00.000Z. FinancialSafetyPolicy held it for review (Large transfer "amount":250000; severity high, risk 0.90) after 2 policies were evaluated. cfo@example.com approved it on 2026-11-15T12:05:00.000Z: "Vendor confirmed by phone". The agent reported it executed.',
    }),
  })
  .openapi('ActionExplanation');

export const WINDOWS = { '24h': 24, '7d': 7 * 24, '30d': 30 * 24 } as const;
export const DashboardQuery = z.object({
  window: z.enum(['24h', '7d', '30d']).default('24h').openapi({ description: 'How far back from now', example: '24h' }),
  bucket: z.enum(['hour', 'day']).optional().openapi({ description: 'Series resolution; `hour` for 24h, else `day` by default', example: 'hour' }),
});

const Counts = z.object({
  actions: z.number().int().openapi({ example: 120 }),
  allowed: z.number().int().openapi({ example: 100 }),
  blocked: z.number().int().openapi({ example: 5 }),
  pending_review: z.number().int().openapi({ example: 15 }),
  violations: z.number().int().openapi({ example: 27 }),
});

export const DashboardResponse = z
  .object({
    window: z.enum(['24h', '7d', '30d']),
    bucket: z.enum(['hour', 'day']),
    since: z.string().openapi({ example: '2026-11-14T12:00:00.000Z' }),
    until: z.string().openapi({ example: TIME }),
    backend: z.literal('postgres').openapi({ description: 'Where the numbers come from (always the relational store here)' }),
    totals: Counts.extend({
      shadow: z.number().int().openapi({ description: 'Actions evaluated in shadow mode (counted under the outcome enforcement would have had)', example: 0 }),
    }).openapi({ description: 'By what evaluation decided (in shadow mode: would have decided)' }),
    by_status: z.record(z.string(), z.number().int()).openapi({
      description: "Current status of the window's actions",
      example: { allowed: 90, executed: 10, blocked: 5, pending_review: 3, approved: 8, denied: 4 },
    }),
    violations_by_policy: z.array(
      z.object({
        policy: z.string().openapi({ example: 'FinancialSafetyPolicy' }),
        violations: z.number().int().openapi({ example: 15 }),
        blocked: z.number().int().openapi({ example: 0 }),
        held: z.number().int().openapi({ example: 15 }),
      }),
    ),
    violations_by_agent: z.array(
      z.object({
        agent_id: z.string().nullable().openapi({ example: 'billing-agent' }),
        violations: z.number().int().openapi({ example: 12 }),
        actions: z.number().int().openapi({ example: 10 }),
      }),
    ),
    series: z
      .array(Counts.extend({ bucket_start: z.string().openapi({ example: '2026-11-15T11:00:00.000Z' }) }))
      .openapi({ description: 'One entry per bucket, empty ones included, oldest first' }),
  })
  .openapi('ControlDashboard');

export const AgentParams = z.object({ agent_id: z.string().min(1).max(128).openapi({ description: 'The agent', example: 'billing-agent' }) });
export const ViolationsQuery = PageQuery({ max: 500, default: 100 }).extend({
  since: z.string().max(64).optional().openapi({ description: 'ISO 8601; default 30 days ago', example: '2026-11-01T00:00:00Z' }),
  until: z.string().max(64).optional().openapi({ description: 'ISO 8601; default now', example: '2026-11-30T00:00:00Z' }),
});
export const ViolationsPaging = paging({ totals: ['total'], hasMore: true });

export const ViolationsResponse = z
  .object({
    agent_id: z.string().openapi({ example: 'billing-agent' }),
    since: z.string().openapi({ example: '2026-11-01T00:00:00.000Z' }),
    until: z.string().openapi({ example: '2026-11-30T00:00:00.000Z' }),
    violation_count: z.number().int().openapi({ description: 'Violations in the period (an action may have several)', example: 3 }),
    actions: z.array(
      z.object({
        action_id: z.string().openapi({ example: ACTION_ID }),
        action: z.string().openapi({ example: 'http.post' }),
        connector: z.enum(CONNECTORS).nullable(),
        status: z.enum(ACTION_STATES),
        outcome: z.enum(['allowed', 'blocked', 'pending_review']).openapi({ description: 'What evaluation decided (in shadow mode: would have)' }),
        evaluation_mode: z.enum(EVALUATION_MODES),
        submitted_at: z.string().openapi({ example: TIME }),
        risk_score: z.number().nullable().openapi({ example: 0.9 }),
        violations: z.array(Violation),
      }),
    ),
    ...ViolationsPaging.fields,
  })
  .openapi('AgentViolations');
