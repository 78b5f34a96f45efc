import { z } from '@hono/zod-openapi';
import { ACTION_STATES } from '../../../schema/actions';
import { APPROVAL_MODES, CONNECTORS, EVALUATION_MODES, OUTCOMES, SEVERITIES } from '../../../shared/control/types';
import { idPattern } from '../../../shared/platform/contract/ids';
import { Metadata, PrefixedId } from '../../../shared/platform/contract/params';
import { PageQuery, paging } from '../../../shared/platform/data/pagination';

/** An action's params: any JSON object up to 64 KB (policies read all of it). */
export const MAX_PARAMS_BYTES = 64 * 1024;
export const TIME = '2026-11-15T12:00:00.000Z';
export const ACTION_ID = idPattern('action').example;

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
    params: Metadata(
      'The payload the agent intends to send; every policy reads all of it.',
      { repo: 'acme/api', title: 'Flaky test' },
      MAX_PARAMS_BYTES,
    ).default({}),
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
export const ConnectorBody = Metadata(
  'The params of the action, flat: the whole body is the payload.',
  { channel: '#general', text: 'standup at 10' },
  MAX_PARAMS_BYTES,
).openapi('ActionConnectorParams', { example: { channel: '#general', text: 'standup at 10' } });

export const Violation = z
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
    evaluation_mode: z.enum(EVALUATION_MODES).openapi({ description: "The tenant's evaluation mode when the action was evaluated" }),
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
  .object({
    ...Submitted,
    status: z.enum(['allowed', 'pending_review']).openapi({ description: '`pending_review`: poll GET /v1/actions/{action_id} for the decision' }),
  })
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

export const ActionParams = z.object({ action_id: PrefixedId('action', 'The action (its approval id is the same), or a held memory id') });

export const ActionStatusSchema = z
  .object({
    action_id: z.string().openapi({ example: ACTION_ID }),
    action: z.string().openapi({ example: 'http.post' }),
    connector: z.enum(CONNECTORS).nullable(),
    operation: z.string().openapi({ example: 'post' }),
    agent_id: z.string().nullable().openapi({ example: 'billing-agent' }),
    status: z.enum(ACTION_STATES).openapi({ description: '`approved` and `executed` mean go (executed: done); `denied`, `blocked` and `failed` mean stop' }),
    reason: z
      .string()
      .nullable()
      .openapi({ description: 'Why it was decided so (the deciding reason, `expired`, or the policy reason)', example: 'Vendor confirmed by phone' }),
    decided_at: z.string().nullable().openapi({ example: TIME }),
    submitted_at: z.string().openapi({ example: TIME }),
    risk_score: z.number().nullable().openapi({ example: 0.9 }),
    approval_mode: z.enum(APPROVAL_MODES).nullable().openapi({ description: 'The approval mode the action is decided under; null when it was never pending' }),
    result_detail: z.unknown().optional().openapi({ description: 'What the agent reported with executed or failed' }),
    kind: z
      .literal('memory')
      .optional()
      .openapi({ description: 'A memory write a rule held (docs/governed-memories.md), polled by its approval id; absent for an action' }),
    memory_id: z.string().nullable().optional().openapi({
      description: 'A held memory: the id of the memory stored once approved (null while pending or when denied)',
      example: 'urn:uuid:01935f6e-8a2b-7c3d-9e4f-5a6b7c8d9e0f',
    }),
  })
  .openapi('ActionStatus');

export const ListQuery = PageQuery({ max: 100, default: 50 });
export const ListPaging = paging({ totals: ['total'], hasMore: true });

export const ActionList = z
  .object({
    actions: z.array(
      ActionStatusSchema.extend({
        outcome: z
          .enum(['allowed', 'blocked', 'pending_review'])
          .openapi({ description: 'What the evaluation answered at submission: allowed, blocked or pending_review' }),
      }),
    ),
    ...ListPaging.fields,
  })
  .openapi('ActionList');

export const ResultBody = z
  .object({
    status: z.enum(['executed', 'failed']).openapi({ description: 'What happened when the agent ran the action' }),
    detail: z
      .union([z.string().max(10_000), Metadata('Structured detail.', { issue: 1234 })])
      .optional()
      .openapi({ description: 'A message (up to 10,000 characters) or a JSON object (up to 16 KB)', example: 'Issue #1234 created' }),
  })
  .openapi('ActionResult', { example: { status: 'executed', detail: 'Issue #1234 created' } });
