import { z } from '@hono/zod-openapi';
import { ACTION_STATES } from '../../schema/actions';
import { APPROVAL_MODES, CONNECTORS, EVALUATION_MODES, OUTCOMES, SEVERITIES } from '../../shared/control/types';
import { idPattern } from '../../shared/platform/ids';
import { PageQuery, paging } from '../../shared/platform/pagination';
import { Metadata, PrefixedId } from '../../shared/platform/params';
import { TIERS } from '../../shared/platform/tiers';

/** An action's params: any JSON object up to 64 KB (policies read all of it). */
export const MAX_PARAMS_BYTES = 64 * 1024;
const TIME = '2026-11-15T12:00:00.000Z';
const ACTION_ID = idPattern('action').example;

/** `connector.operation`: a first segment, a dot, then the operation (dots, slashes and dashes allowed). */
export const ACTION_NAME = /^[A-Za-z0-9_-]{1,64}\.[A-Za-z0-9_./-]{1,191}$/;
export const OPERATION = /^[A-Za-z0-9_./-]{1,191}$/;

const AgentId = z.string().trim().min(1).max(128).openapi({ description: "The submitting agent's id (a free-form label)", example: 'billing-agent' });

export const SubmitBody = z
  .object({
    action: z
      .string()
      .max(256)
      .regex(ACTION_NAME, 'must be a connector-dot-operation name, e.g. github.create_issue')
      .openapi({
        description: `A connector-dot-operation name. A first segment that is one of ${CONNECTORS.join(', ')} is the action's \`connector\`; any other first segment is allowed and gives \`connector: null\`.`,
        example: 'github.create_issue',
      }),
    params: Metadata('The payload the agent intends to send; every policy reads all of it.', { repo: 'acme/api', title: 'Flaky test' }, MAX_PARAMS_BYTES).default({}),
    agent_id: AgentId.optional(),
  })
  .openapi('ActionSubmit', { example: { action: 'github.create_issue', params: { repo: 'acme/api', title: 'Flaky test in CI' }, agent_id: 'triage-agent' } });

export const ConnectorParams = z.object({
  connector: z.enum(CONNECTORS).openapi({ description: 'The connector', example: 'slack' }),
  operation: z
    .string()
    .regex(OPERATION, 'must be 1 to 191 letters, digits, _ . / -')
    .openapi({ description: 'The operation; may span path segments (`http/post` gives `http.post`... under the connector)', example: 'post_message' }),
});
export const ConnectorQuery = z.object({
  agent_id: AgentId.optional().openapi({ description: 'The submitting agent (or the `X-Agent-Id` header; when both are sent they must agree)' }),
});
export const ConnectorBody = Metadata('The params of the action, flat: the whole body is the payload.', { channel: '#general', text: 'standup at 10' }, MAX_PARAMS_BYTES).openapi(
  'ActionConnectorParams',
  { example: { channel: '#general', text: 'standup at 10' } },
);

const Violation = z
  .object({
    policy: z.string().openapi({ example: 'FinancialSafetyPolicy' }),
    rule_index: z.number().int().openapi({ example: 0 }),
    severity: z.enum(SEVERITIES),
    on_violation: z.enum(OUTCOMES),
    reason: z.string().openapi({ example: 'Large transfer "amount": 250000' }),
    confidence: z.number().openapi({ example: 0.85 }),
    match: z.string().openapi({ example: '"amount":250000' }),
    field: z.string().openapi({ example: '$.amount' }),
  })
  .openapi('PolicyViolation');

export const PolicyResultSchema = z
  .object({
    status: z.enum(['allowed', 'blocked', 'pending_review']).openapi({ description: 'The outcome (in shadow mode always `allowed`; see `shadow_status`)' }),
    risk_score: z.number().openapi({ example: 0.9 }),
    evaluation_time_ms: z.number().openapi({ example: 0.21 }),
    triggered_policy: z.string().optional().openapi({ example: 'FinancialSafetyPolicy' }),
    reason: z.string().optional().openapi({ example: 'Large transfer "amount": 250000' }),
    severity: z.enum(SEVERITIES).optional(),
    warnings: z.array(z.string()),
    policies_evaluated: z.array(z.string()).openapi({ example: ['FinancialSafetyPolicy', 'DataExfiltrationPolicy'] }),
    violations: z.array(Violation).nullable(),
    action_id: z.string().optional().openapi({ description: 'Present when pending_review: poll it, or decide it as an approval id', example: ACTION_ID }),
    evaluation_mode: z.enum(EVALUATION_MODES).openapi({ description: 'The tenant\'s evaluation mode when the action was evaluated' }),
    shadow_status: z
      .enum(['allowed', 'blocked', 'pending_review'])
      .optional()
      .openapi({ description: 'Shadow mode only: what enforcement would have answered. Recorded, never enforced.' }),
  })
  .openapi('PolicyResult');

const Submitted = {
  action_id: z.string().openapi({ description: 'Also the approval id', example: ACTION_ID }),
  action: z.string().openapi({ example: 'github.create_issue' }),
  connector: z.enum(CONNECTORS).nullable().openapi({ description: 'null when the first segment of `action` is not a known connector' }),
  operation: z.string().openapi({ example: 'create_issue' }),
  agent_id: z.string().nullable().openapi({ example: 'triage-agent' }),
  policy_result: PolicyResultSchema,
  message: z.string().openapi({ example: 'Allowed: no policy objected.' }),
  submitted_at: z.string().openapi({ example: TIME }),
};

export const SubmitResponse = z
  .object({ ...Submitted, status: z.enum(['allowed', 'pending_review']).openapi({ description: '`pending_review`: poll GET /v1/actions/{action_id} for the decision' }) })
  .openapi('ActionSubmitted');

/** 403 BLOCKED: the error fields and the whole action body, whose `status` is the action's. */
export const BlockedResponse = z
  .object({
    error: z.string().openapi({ example: 'Blocked by DataExfiltrationPolicy: Private key in payload' }),
    code: z.literal('BLOCKED'),
    request_id: z.string().openapi({ example: 'req_4f9Qw2b8Zr1LmT0aXcVe3K' }),
    ...Submitted,
    message: z.string().openapi({ example: 'Blocked by DataExfiltrationPolicy: Private key in payload' }),
    status: z.literal('blocked').openapi({ description: "The action's status, as on the route's other answers (the HTTP status is 403)" }),
  })
  .openapi('ActionBlocked');

export const ActionParams = z.object({ action_id: PrefixedId('action', 'The action (its approval id is the same)') });

export const ActionStatusSchema = z
  .object({
    action_id: z.string().openapi({ example: ACTION_ID }),
    action: z.string().openapi({ example: 'http.post' }),
    connector: z.enum(CONNECTORS).nullable(),
    operation: z.string().openapi({ example: 'post' }),
    agent_id: z.string().nullable().openapi({ example: 'billing-agent' }),
    status: z.enum(ACTION_STATES).openapi({ description: '`approved` and `executed` mean go (executed: done); `denied`, `blocked` and `failed` mean stop' }),
    reason: z.string().nullable().openapi({ description: 'Why it was decided so (the deciding reason, `expired`, or the policy reason)', example: 'Vendor confirmed by phone' }),
    decided_at: z.string().nullable().openapi({ example: TIME }),
    submitted_at: z.string().openapi({ example: TIME }),
    risk_score: z.number().nullable().openapi({ example: 0.9 }),
    approval_mode: z.enum(APPROVAL_MODES).nullable().openapi({ description: 'The approval mode the action is decided under; null when it was never pending' }),
    result_detail: z.unknown().optional().openapi({ description: 'What the agent reported with executed or failed' }),
  })
  .openapi('ActionStatus');

export const ResultBody = z
  .object({
    status: z.enum(['executed', 'failed']).openapi({ description: 'What happened when the agent ran the action' }),
    detail: z
      .union([z.string().max(10_000), Metadata('Structured detail.', { issue: 1234 })])
      .optional()
      .openapi({ description: 'A message (up to 10,000 characters) or a JSON object (up to 16 KB)', example: 'Issue #1234 created' }),
  })
  .openapi('ActionResult', { example: { status: 'executed', detail: 'Issue #1234 created' } });

// Approvals -----------------------------------------------------------------------------------

const QUEUE_STATES = ['pending_review', 'approved', 'denied', 'executed', 'failed'] as const;
const QueueStatus = z.enum(QUEUE_STATES);
export const QueueQuery = PageQuery({ max: 500, default: 50 }).extend({
  status: QueueStatus.optional().openapi({ description: 'Only entries in this status' }),
  status_filter: QueueStatus.optional().openapi({ description: 'The same as `status` (an older name); when both are sent they must agree' }),
  scope: z
    .enum(['own', 'team'])
    .default('own')
    .openapi({
      description:
        "`own` (default): your tenant's approvals, in audit order. `team`: what you review: the team- and enterprise-mode approvals of the tenants you share a team with, oldest submission first, with the submitter's `tenant_id` and the action's `params`",
      example: 'own',
    }),
});
export const QueuePaging = paging({ totals: ['total'], hasMore: true });

const ApprovalEntry = z
  .object({
    approval_id: z.string().openapi({ example: ACTION_ID }),
    action: z.string().openapi({ example: 'http.post' }),
    connector: z.enum(CONNECTORS).nullable(),
    agent_id: z.string().nullable().openapi({ example: 'billing-agent' }),
    status: z.enum(ACTION_STATES),
    submitted_at: z.string().openapi({ example: TIME }),
    risk_score: z.number().nullable().openapi({ example: 0.9 }),
    approval_mode: z.enum(APPROVAL_MODES).nullable(),
    decided_at: z.string().nullable().openapi({ example: null }),
    reason: z.string().nullable().openapi({ example: 'Large transfer "amount": 250000' }),
    tenant_id: z.string().optional().openapi({ description: '`scope=team` only: the submitting tenant', example: 'ten_2aB9xQ7mLp0cRt5VwZ1yK8' }),
    params: z.record(z.string(), z.unknown()).optional().openapi({ description: '`scope=team` only: what the reviewer is asked to approve', example: { url: 'https://bank.example/wire', amount: 250000 } }),
  })
  .openapi('ApprovalEntry');

export const QueueResponse = z.object({ approvals: z.array(ApprovalEntry), ...QueuePaging.fields }).openapi('ApprovalQueue');

export const ApprovalParams = z.object({ approval_id: PrefixedId('action', 'The approval (the action id)') });

const DecisionFields = {
  decision: z
    .string()
    .max(64)
    .optional()
    .openapi({ description: '`approve` (default) or `deny`; anything else is 400 control.invalid_decision', example: 'approve' }),
  reason: z.string().max(2_000).optional().openapi({ description: 'Why; recorded with the decision and shown to the polling agent', example: 'Vendor confirmed by phone' }),
  approver_id: z.string().trim().min(1).max(254).optional().openapi({ description: "Who decides, as recorded; defaults to the deciding tenant's owner (its e-mail)", example: 'cfo@example.com' }),
  confirmation: z.string().max(64).optional().openapi({ description: 'Solo mode: `ROLLBACK` to approve a destructive action', example: 'ROLLBACK' }),
};
/**
 * In the body `decision` may be any JSON scalar: whatever is not approve or deny is answered 400
 * control.invalid_decision by the verb (spec §7), not the router's VALIDATION_ERROR.
 */
export const DecisionBody = z
  .object({
    ...DecisionFields,
    decision: z
      .union([z.string().max(1_000), z.number(), z.boolean(), z.null()])
      .optional()
      .openapi({ type: 'string', description: '`approve` (default) or `deny`; anything else is 400 control.invalid_decision', example: 'approve' }),
  })
  .openapi('ApprovalDecision', { example: { decision: 'approve', reason: 'Vendor confirmed by phone', confirmation: 'ROLLBACK' } });
export const DecisionQuery = z.object(DecisionFields);

export const DecisionResponse = z
  .object({
    approval_id: z.string().openapi({ example: ACTION_ID }),
    decision: z.enum(['approve', 'deny']),
    reason: z.string().nullable().openapi({ example: 'Vendor confirmed by phone' }),
    status: z.enum(['approved', 'denied', 'pending_review']).openapi({ description: '`pending_review` only in enterprise mode, while approvals are still short of `min_approvals`' }),
    approver_id: z.string().openapi({ example: 'cfo@example.com' }),
    approvals: z.number().int().openapi({ description: 'Distinct approvers so far', example: 1 }),
    approvals_required: z.number().int().openapi({ description: 'Approvals needed (enterprise: min_approvals; else 1)', example: 1 }),
    decided_at: z.string().nullable().openapi({ example: TIME }),
  })
  .openapi('ApprovalDecided');

// Settings ------------------------------------------------------------------------------------

/** Roles that may decide: a readonly member never decides, so it cannot be listed. */
export const DECIDING_ROLES = ['owner', 'admin', 'member'] as const;

export const SettingsSchema = z
  .object({
    approval_mode: z.enum(APPROVAL_MODES).openapi({ description: '`solo` (all tiers), `team` (Starter+), `enterprise` (Enterprise)' }),
    evaluation_mode: z.enum(EVALUATION_MODES).openapi({ description: '`enforcement`, or `shadow`: evaluate and record, never block or hold' }),
    min_approvals: z.number().int().openapi({ description: 'Enterprise mode: distinct approvers needed, 1 to 10', example: 2 }),
    require_manager: z.boolean().openapi({ description: 'Enterprise mode: one approver must be an owner or admin of a team shared with the submitter' }),
    allowed_roles: z.array(z.enum(DECIDING_ROLES)).openapi({ description: 'Enterprise mode: only approvers with one of these team roles decide; empty means any role but readonly', example: ['owner', 'admin'] }),
    effective_approval_mode: z.enum(APPROVAL_MODES).openapi({ description: 'The mode new actions are decided in: always `approval_mode`, also after a downgrade (see `approval_mode_unavailable`)' }),
    approval_mode_unavailable: z
      .object({
        code: z.string().openapi({ example: 'svc_ram.v1.tier.feature_required' }),
        feature: z.enum(['team_approvals', 'enterprise_approvals']),
        required_tier: z.enum(TIERS),
        current_tier: z.enum(TIERS),
        message: z.string(),
      })
      .nullable()
      .openapi({
        description:
          'Null, or (after a downgrade below `approval_mode`) the refusal every action that needs review gets, 403 with this code, until the mode is changed or the tier upgraded; actions no rule holds are still allowed',
      }),
    updated_at: z.string().nullable().openapi({ example: TIME }),
  })
  .openapi('ControlSettings');

export const SettingsBody = z
  .object({
    approval_mode: z.enum(APPROVAL_MODES).optional(),
    evaluation_mode: z.enum(EVALUATION_MODES).optional(),
    min_approvals: z.number().int().min(1).max(10).optional().openapi({ description: '1 to 10' }),
    require_manager: z.boolean().optional(),
    allowed_roles: z
      .array(z.enum(DECIDING_ROLES))
      .max(3)
      .optional()
      .openapi({ description: 'Team roles allowed to approve in enterprise mode (owner, admin, member)' }),
  })
  .openapi('ControlSettingsUpdate', { example: { approval_mode: 'team', evaluation_mode: 'enforcement' } });
export type DecisionInput = z.infer<typeof DecisionBody>;
export type DecisionQueryInput = z.infer<typeof DecisionQuery>;

// Explain, dashboard, violations ---------------------------------------------------------------

const ApprovalDecisionRecord = z.object({
  decision: z.enum(['approve', 'deny']),
  approver_id: z.string().openapi({ example: 'cfo@example.com' }),
  approver_tenant_id: z.string().openapi({ example: 'ten_2aB9xQ7mLp0cRt5VwZ1yK8' }),
  approver_role: z.string().nullable().openapi({ description: "The approver's best role in a team shared with the submitter (team and enterprise modes)", example: 'admin' }),
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
    by_status: z.record(z.string(), z.number().int()).openapi({ description: 'Current status of the window\'s actions', example: { allowed: 90, executed: 10, blocked: 5, pending_review: 3, approved: 8, denied: 4 } }),
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
    series: z.array(Counts.extend({ bucket_start: z.string().openapi({ example: '2026-11-15T11:00:00.000Z' }) })).openapi({ description: 'One entry per bucket, empty ones included, oldest first' }),
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
