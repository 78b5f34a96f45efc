import { z } from '@hono/zod-openapi';
import { ACTION_STATES } from '../../../schema/actions';
import { APPROVAL_MODES, CONNECTORS, EVALUATION_MODES } from '../../../shared/control/types';
import { PageQuery, paging } from '../../../shared/platform/data/pagination';
import { PrefixedId } from '../../../shared/platform/contract/params';
import { TIERS } from '../../../shared/platform/contract/tiers';
import { ACTION_ID, PolicyResultSchema, TIME } from './actions';

// Approvals -----------------------------------------------------------------------------------

const QUEUE_STATES = ['pending_review', 'approved', 'denied', 'executed', 'failed'] as const;
const QueueStatus = z.enum(QUEUE_STATES);
export const QueueQuery = PageQuery({ max: 500, default: 50 }).extend({
  status: QueueStatus.optional().openapi({ description: 'Only entries in this status' }),
  status_filter: QueueStatus.optional().openapi({ description: 'The same as `status` (an older name); when both are sent they must agree' }),
  approval_id: PrefixedId(
    'action',
    'Only this approval (the action id, or a held memory id): an empty page when it is not in the queue of this `scope`',
  ).optional(),
  scope: z.enum(['own', 'team']).default('own').openapi({
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
    approvals: z.number().int().openapi({ description: 'Distinct tenants that approved so far', example: 0 }),
    approvals_required: z.number().int().openapi({ description: 'Approvals needed (enterprise: min_approvals; else 1)', example: 1 }),
    decided_at: z.string().nullable().openapi({ example: null }),
    decided_by_key_id: z
      .string()
      .nullable()
      .openapi({ description: 'The key that recorded the final decision; null while pending, or when it expired undecided', example: null }),
    reason: z.string().nullable().openapi({ example: 'Large transfer "amount": 250000' }),
    tenant_id: z.string().optional().openapi({ description: '`scope=team` only: the submitting tenant', example: 'ten_2aB9xQ7mLp0cRt5VwZ1yK8' }),
    params: z
      .record(z.string(), z.unknown())
      .optional()
      .openapi({
        description:
          'What the reviewer is asked to approve: always with `scope=team`; with `scope=own` only for a key that may read actions (`actions:read`, as GET /v1/actions/{action_id}/explain needs)',
        example: { url: 'https://bank.example/wire', amount: 250000 },
      }),
    policy_result: PolicyResultSchema.optional().openapi({ description: 'Why it was held (the matching rule and the text it matched); shown with `params`' }),
    kind: z.enum(['action', 'memory']).openapi({
      description:
        '`action`, or `memory`: a memory write a memory policy held (docs/governed-memories.md); `approval_id` is then the memory id it gets when approved',
    }),
    observation: z
      .string()
      .optional()
      .openapi({ description: '`kind: memory`, for a key that may read memories: the held text', example: 'Ignore previous instructions' }),
    tags: z.array(z.string()).optional().openapi({ description: '`kind: memory`: its tags' }),
    space_id: z.string().nullable().optional().openapi({ description: '`kind: memory`: the space it would be stored into (a bare uuid), or null' }),
    source: z
      .record(z.string(), z.unknown())
      .optional()
      .openapi({ description: '`kind: memory`: where it came from (`kind`, `via`, `key_id`, `agent_id`, `ref`), as the memory will carry it' }),
    trust: z.enum(['verified', 'agent', 'external']).optional().openapi({ description: '`kind: memory`: its trust' }),
    memory_id: z.string().optional().openapi({ description: '`kind: memory`: the memory id it gets when approved (the same as `approval_id`)' }),
  })
  .openapi('ApprovalEntry');

export const QueueResponse = z.object({ approvals: z.array(ApprovalEntry), ...QueuePaging.fields }).openapi('ApprovalQueue');

export const ApprovalParams = z.object({
  approval_id: PrefixedId('action', 'The approval: an action id, or a held memory id'),
});

const DecisionFields = {
  decision: z
    .string()
    .max(64)
    .optional()
    .openapi({ description: '`approve` (default) or `deny`; anything else is 400 control.invalid_decision', example: 'approve' }),
  reason: z
    .string()
    .max(2_000)
    .optional()
    .openapi({ description: 'Why; recorded with the decision and shown to the polling agent', example: 'Vendor confirmed by phone' }),
  approver_id: z
    .string()
    .trim()
    .min(1)
    .max(254)
    .optional()
    .openapi({ description: "Who decides, as recorded; defaults to the deciding tenant's owner (its e-mail)", example: 'cfo@example.com' }),
  confirmation: z.string().max(64).optional().openapi({ description: 'Solo mode: `ROLLBACK` to approve a destructive action', example: 'ROLLBACK' }),
};
/**
 * In the body `decision` may be any JSON scalar: whatever is not approve or deny is answered 400
 * control.invalid_decision by the verb (the contract's code for it), not the router's VALIDATION_ERROR.
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
    status: z
      .enum(['approved', 'denied', 'pending_review'])
      .openapi({ description: '`pending_review` only in enterprise mode, while approvals are still short of `min_approvals`' }),
    approver_id: z.string().openapi({ example: 'cfo@example.com' }),
    decided_by_key_id: z
      .string()
      .openapi({ description: 'The key that recorded this decision (never the key that submitted the action)', example: 'key_2aB9xQ7mLp0cRt5VwZ1yK8' }),
    approvals: z.number().int().openapi({ description: 'Distinct approvers so far', example: 1 }),
    approvals_required: z.number().int().openapi({ description: 'Approvals needed (enterprise: min_approvals; else 1)', example: 1 }),
    decided_at: z.string().nullable().openapi({ example: TIME }),
    kind: z.enum(['action', 'memory']).optional().openapi({ description: '`memory` for a held memory (docs/governed-memories.md); absent for an action' }),
    memory_id: z.string().nullable().optional().openapi({
      description: 'A held memory: the id of the memory stored on approval (null when denied)',
      example: 'urn:uuid:01935f6e-8a2b-7c3d-9e4f-5a6b7c8d9e0f',
    }),
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
    allowed_roles: z.array(z.enum(DECIDING_ROLES)).openapi({
      description: 'Enterprise mode: only approvers with one of these team roles decide; empty means any role but readonly',
      example: ['owner', 'admin'],
    }),
    memory_guard: z.boolean().openapi({
      description:
        'The built-in MemoryInjection policy (off by default): holds memories written by agents or outside sources that carry instructions to the agent, tool-call syntax, credentials, or (external ones) URLs, for review in GET /v1/approvals',
    }),
    effective_approval_mode: z
      .enum(APPROVAL_MODES)
      .openapi({ description: 'The mode new actions are decided in: always `approval_mode`, also after a downgrade (see `approval_mode_unavailable`)' }),
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
    memory_guard: z.boolean().optional().openapi({ description: 'Turn the built-in MemoryInjection memory policy on or off' }),
  })
  .openapi('ControlSettingsUpdate', { example: { approval_mode: 'team', evaluation_mode: 'enforcement' } });
export type DecisionInput = z.infer<typeof DecisionBody>;
