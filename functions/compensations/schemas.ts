import { z } from '@hono/zod-openapi';
import { ACTION_STATUSES, PLAN_STATUSES } from '../../schema/compensations';
import { MAX_PLAN_ACTIONS } from '../../shared/memory/compensations';
import { PageQuery, paging } from '../../shared/platform/data/pagination';
import { PointInTime, PrefixedId } from '../../shared/platform/contract/params';

export const LIST_MAX = 100;
export const DETAIL_MAX = 2_000;
/** Statuses an acknowledgment may set; `pending` is only where an action starts. */
export const ACK_STATUSES = ['completed', 'failed', 'skipped'] as const;

const EXAMPLE_ID = 'comp_4f9Qw2b8Zr1LmT0aXcVe3K';
const EXAMPLE_FROM = '2026-11-01T12:00:00.000Z';
const EXAMPLE_TO = '2026-11-01T10:00:00.000Z';

const Instant = PointInTime;

export const PreviewBody = z
  .object({
    rollback_from: Instant('The later end of the window: the moment the store would be rolled back from (usually now); not in the future', EXAMPLE_FROM),
    rollback_to: Instant('The rollback target, the earlier end: steps after it are covered; not after `rollback_from`', EXAMPLE_TO),
  })
  .openapi('CompensationPreviewRequest', { example: { rollback_from: '0 minutes ago', rollback_to: '2 hours ago' } });

export const PlanParams = z.object({
  id: PrefixedId('compensation', 'The compensation plan id'),
});

export const ActionParams = PlanParams.extend({
  index: z
    .string()
    .regex(/^\d{1,7}$/, 'must be a non-negative integer')
    .transform(Number)
    .openapi({ param: { name: 'index', in: 'path' }, description: 'The action index (zero-based, as in `actions[].index`)', example: '0' }),
});

export const AckBody = z
  .object({
    status: z.enum(ACK_STATUSES).openapi({ description: 'What became of the reversal', example: 'completed' }),
    detail: z
      .string()
      .max(DETAIL_MAX)
      .optional()
      .openapi({ description: `Free text, at most ${DETAIL_MAX} characters`, example: 'Refund re_3Nq8 issued' }),
  })
  .openapi('CompensationAcknowledgment', { example: { status: 'completed', detail: 'Refund re_3Nq8 issued' } });

export const ListQuery = z
  .object({ status: z.enum(PLAN_STATUSES).optional().openapi({ description: 'Only plans in this status' }) })
  .extend(PageQuery({ max: LIST_MAX, default: 20 }).shape);

export const ListPaging = paging({ totals: ['total'], hasMore: true });

const Counts = z
  .object({ pending: z.number().int(), completed: z.number().int(), failed: z.number().int(), skipped: z.number().int() })
  .openapi({ description: 'Actions per status', example: { pending: 1, completed: 1, failed: 0, skipped: 0 } });

const PlanSummary = z.object({
  plan_id: z.string().openapi({ example: EXAMPLE_ID }),
  rollback_id: z
    .string()
    .nullable()
    .openapi({ description: 'The rollback that created the plan; null for a plan made through the preview endpoint', example: null }),
  rollback_from: z.string().openapi({ example: EXAMPLE_FROM }),
  rollback_to: z.string().openapi({ example: EXAMPLE_TO }),
  status: z
    .enum(PLAN_STATUSES)
    .openapi({ description: '`pending` until the first acknowledgment, `in_progress` while any action is pending, then `completed`', example: 'in_progress' }),
  action_count: z.number().int().openapi({ example: 2 }),
  truncated: z
    .boolean()
    .openapi({ description: `More than ${MAX_PLAN_ACTIONS} ACTION steps lay in the window; the plan holds the oldest ${MAX_PLAN_ACTIONS}`, example: false }),
  counts: Counts,
  created_at: z.string().openapi({ example: '2026-11-22T12:00:00.000Z' }),
  completed_at: z.string().nullable().openapi({ example: null }),
});

const ActionSchema = z
  .object({
    index: z.number().int().openapi({ example: 0 }),
    trace_id: z.string().openapi({ example: 'trc_8Hq2LmT0aXcVe3K4f9Qw2b' }),
    step_id: z.string().openapi({ example: 'stp_Zr1LmT0aXcVe3K4f9Qw2b8' }),
    step_index: z.number().int().openapi({ example: 3 }),
    agent_id: z.string().nullable().openapi({ example: 'billing-agent' }),
    content: z.string().openapi({ description: 'The ACTION step as the agent recorded it', example: 'POST /v1/refunds {"charge": "ch_3Nq8", "amount": 4200}' }),
    metadata: z.record(z.string(), z.unknown()).openapi({ example: { tool: 'stripe', undo: 'Reverse refund re_3Nq8 in the Stripe dashboard' } }),
    step_at: z.string().openapi({ description: 'When the step was recorded', example: '2026-11-22T10:41:07.512Z' }),
    suggested: z.string().openapi({
      description: 'A reversal hint: the step metadata `compensation` (or `undo`) string when the agent left one, else `Review and reverse: <content>`',
      example: 'Reverse refund re_3Nq8 in the Stripe dashboard',
    }),
    status: z.enum(ACTION_STATUSES).openapi({ example: 'completed' }),
    detail: z.string().nullable().openapi({ example: 'Refund re_3Nq8 reversed' }),
    acknowledged_at: z.string().nullable().openapi({ example: '2026-11-22T12:05:00.000Z' }),
    acknowledged_by: z.string().nullable().openapi({ description: 'The key that acknowledged it', example: 'key_2aB9xQ7mLp0cRt5VwZ1yK8' }),
  })
  .openapi('CompensationAction');

export const PlanSchema = PlanSummary.extend({ actions: z.array(ActionSchema) }).openapi('CompensationPlan');

export const ListResponse = z
  .object({ compensations: z.array(PlanSummary.openapi('CompensationPlanSummary')), ...ListPaging.fields })
  .openapi('CompensationPlanList');

export const AckResponse = z
  .object({
    plan_id: z.string().openapi({ example: EXAMPLE_ID }),
    plan_status: z.enum(PLAN_STATUSES).openapi({ example: 'completed' }),
    completed_at: z.string().nullable().openapi({ example: '2026-11-22T12:05:00.000Z' }),
    counts: Counts,
    action: ActionSchema,
  })
  .openapi('CompensationAcknowledgmentResult');

export interface PlanRow {
  id: string;
  rollback_id: string | null;
  rollback_from: Date | string;
  rollback_to: Date | string;
  status: (typeof PLAN_STATUSES)[number];
  action_count: number;
  truncated: boolean;
  created_at: Date | string;
  completed_at: Date | string | null;
  pending: number | string;
  completed: number | string;
  failed: number | string;
  skipped: number | string;
}

export interface ActionRow {
  action_index: number;
  trace_id: string;
  step_id: string;
  step_index: number;
  agent_id: string | null;
  step_content: string;
  step_metadata: Record<string, unknown>;
  step_at: Date | string;
  suggested: string;
  status: (typeof ACTION_STATUSES)[number];
  detail: string | null;
  acknowledged_at: Date | string | null;
  acknowledged_by: string | null;
}

const isoOrNull = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

export const toPlanSummary = (r: PlanRow): z.infer<typeof PlanSummary> => ({
  plan_id: r.id,
  rollback_id: r.rollback_id,
  rollback_from: new Date(r.rollback_from).toISOString(),
  rollback_to: new Date(r.rollback_to).toISOString(),
  status: r.status,
  action_count: Number(r.action_count),
  truncated: r.truncated,
  counts: { pending: Number(r.pending), completed: Number(r.completed), failed: Number(r.failed), skipped: Number(r.skipped) },
  created_at: new Date(r.created_at).toISOString(),
  completed_at: isoOrNull(r.completed_at),
});

export const toActionDto = (r: ActionRow): z.infer<typeof ActionSchema> => ({
  index: Number(r.action_index),
  trace_id: r.trace_id,
  step_id: r.step_id,
  step_index: Number(r.step_index),
  agent_id: r.agent_id,
  content: r.step_content,
  metadata: r.step_metadata ?? {},
  step_at: new Date(r.step_at).toISOString(),
  suggested: r.suggested,
  status: r.status,
  detail: r.detail,
  acknowledged_at: isoOrNull(r.acknowledged_at),
  acknowledged_by: r.acknowledged_by,
});
