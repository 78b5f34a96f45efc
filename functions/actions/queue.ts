import type { z } from '@hono/zod-openapi';
import type { CONNECTORS } from '../../shared/control/types';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { validationError } from '../../shared/platform/contract/errors';
import { mayUse } from '../../shared/platform/contract/scopes';
import { isoOrNull } from '../../shared/platform/contract/time';
import { parseUrn } from '../../shared/platform/contract/ids';
import { heldEntry, holdApprovals, holdsPage, teamHoldsPage } from '../../shared/memory/holds';
import * as q from './queries';
import type { PolicyResultSchema, QueueQuery, QueueResponse } from './schemas';
import { QueuePaging } from './schemas';

type Connector = (typeof CONNECTORS)[number];
type PolicyResult = z.infer<typeof PolicyResultSchema>;

/**
 * How far a page of approvals stands: distinct approving tenants (what `min_approvals` counts, as a
 * decision counts them) and the key of the decision that closed it, from one query for the page.
 */
function tallies(decisions: q.DecisionRow[]) {
  const byAction = new Map<string, { approvers: Set<string>; last: q.DecisionRow | null }>();
  for (const d of decisions) {
    const tally = byAction.get(d.actionId) ?? { approvers: new Set<string>(), last: null };
    if (d.decision === 'approve') tally.approvers.add(d.approverTenantId);
    tally.last = d;
    byAction.set(d.actionId, tally);
  }
  return byAction;
}

/**
 * `GET /v1/approvals` (actions.approvals): a page of the queue, each entry with what a reviewer
 * needs to decide it. The action's body (`params`, `policy_result`) is what the actions family
 * guards (GET /v1/actions/{action_id}/explain): an own entry carries it only for a key that may
 * read actions; a team entry always does, since it is what the reviewer is asked to approve.
 */
export async function approvalQueue(ctx: TenantCtx, input: z.infer<typeof QueueQuery>): Promise<z.infer<typeof QueueResponse>> {
  if (input.status && input.status_filter && input.status !== input.status_filter) {
    throw validationError('status_filter', 'must agree with status when both are sent');
  }
  const team = input.scope === 'team';
  const filter = { status: input.status ?? input.status_filter, actionId: input.approval_id };
  const { page, total: actionTotal } = await (team ? q.teamQueue : q.queue)(ctx.db, ctx.tenantId, filter, input);
  const body = team || mayUse(ctx.auth, 'actions:read');
  // Held memories (docs/governed-memories.md) follow the actions: only pending (a decided one is gone
  // from the queue, a memory or nothing); in the team queue those of the writers whose approval team
  // the caller is in, held in team or enterprise mode, with their text as an action's params are.
  const holdId = input.approval_id === undefined ? undefined : parseUrn(input.approval_id);
  const withHolds = (!filter.status || filter.status === 'pending_review') && holdId !== null;
  const holdPage = { offset: Math.max(0, input.offset - actionTotal), limit: input.limit - page.length };
  const holds = withHolds
    ? await (team ? teamHoldsPage(ctx.db, ctx.tenantId, holdPage, { id: holdId }) : holdsPage(ctx.db, ctx.tenantId, holdPage, { id: holdId }))
    : { page: [], total: 0 };
  const decided = tallies(await q.decisionsFor(ctx.db, page));
  const memoryBody = team || mayUse(ctx.auth, 'memories:read');
  const total = actionTotal + holds.total;
  return {
    approvals: [
      ...page.map((row) => actionEntry(row, decided, team, body)),
      ...holds.page.map((row) => {
        const { observation, tags, space_id, source, policy_result, memory_id, submitted_by_key_id: _k, ...entry } = heldEntry(row);
        return {
          ...(team ? { tenant_id: row.tenantId } : {}),
          ...entry,
          ...(memoryBody ? { observation, tags, space_id, source, policy_result: policy_result as unknown as PolicyResult, memory_id } : {}),
          action: 'memory.store',
          connector: null,
          approvals: holdApprovals(row),
          approvals_required: row.approvalRules?.min_approvals ?? 1,
          decided_at: null,
          decided_by_key_id: null,
        };
      }),
    ],
    ...QueuePaging.meta(total, input, page.length + holds.page.length),
  };
}

/** One action of the queue; `body`: with its params and policy result. */
function actionEntry(row: q.ActionRow, decided: ReturnType<typeof tallies>, team: boolean, body: boolean) {
  const tally = decided.get(row.id);
  // The last decision closed it when it agrees with the outcome: a deny closes at once, so a
  // denied action whose last decision approves expired (maintenance decides it, no key).
  const last = tally?.last;
  const closed = row.decidedAt && last && (last.decision === 'deny') === (row.status === 'denied') ? last : null;
  return {
    ...(team ? { tenant_id: row.tenantId } : {}),
    ...(body ? { params: row.params, policy_result: row.policyResult as unknown as PolicyResult } : {}),
    approval_id: row.id,
    action: row.action,
    connector: row.connector as Connector | null,
    agent_id: row.agentId,
    status: row.status,
    submitted_at: row.submittedAt.toISOString(),
    risk_score: row.riskScore,
    approval_mode: row.approvalMode,
    approvals: tally?.approvers.size ?? 0,
    approvals_required: row.approvalRules?.min_approvals ?? 1,
    decided_at: isoOrNull(row.decidedAt),
    decided_by_key_id: closed?.approverKeyId ?? null,
    reason: row.reason,
    kind: 'action' as const,
  };
}
