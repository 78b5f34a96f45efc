import type { PolicyResult } from '../../shared/control/types';
import type { TenantCtx } from '../../shared/platform/context';
import { AppError } from '../../shared/platform/errors';
import { approvalFor } from '../../shared/control/approvals';
import * as q from '../actions/queries';

/** What an inbox card shows of an action held for review. */
export interface Card {
  action_id: string;
  action: string;
  agent_id: string | null;
  status: string;
  submitted_at: string;
  params: unknown;
  policy_result: PolicyResult;
  approval_mode: string;
  approvals_required: number;
  approvals: number;
  reason: string | null;
  /** The submitting account, when it is not the viewer's (a team member's action to review). */
  submitter: string | null;
}

/**
 * The card of a row, read with the actions family's own queries (those behind
 * `GET /v1/approvals` and `GET /v1/actions/{id}/explain`): one query for a page of cards, plus the
 * decisions of the enterprise-mode ones, where approvals are counted towards k of n.
 */
async function cardOf(ctx: TenantCtx, row: q.ActionRow): Promise<Card> {
  const mode = row.approvalMode ?? 'solo';
  const approvals = mode === 'enterprise' ? (await q.decisionsOf(ctx.db, row.tenantId, row.id)).filter((d) => d.decision === 'approve').length : 0;
  return {
    action_id: row.id,
    action: row.action,
    agent_id: row.agentId,
    status: row.status,
    submitted_at: row.submittedAt.toISOString(),
    params: row.params,
    policy_result: row.policyResult as unknown as PolicyResult,
    approval_mode: mode,
    approvals_required: row.approvalRules?.min_approvals ?? 1,
    approvals: mode === 'enterprise' ? approvals : row.status === 'approved' ? 1 : 0,
    reason: row.decidedAt ? row.reason : null,
    submitter: row.tenantId === ctx.tenantId ? null : row.tenantId,
  };
}

/** A page of the tenant's reviewable actions in one status, in audit order (as `GET /v1/approvals`), and their total. */
export async function cardsIn(ctx: TenantCtx, status: q.ActionRow['status'] | 'team', limit: number) {
  const page1 = { limit, offset: 0 };
  // `team`: what waits for this account as a reviewer, as `GET /v1/approvals?scope=team` lists it.
  const { page, total } =
    status === 'team' ? await q.teamQueue(ctx.db, ctx.tenantId, 'pending_review', page1) : await q.queue(ctx.db, ctx.tenantId, status as never, page1);
  const cards: Card[] = [];
  for (const row of page) cards.push(await cardOf(ctx, row));
  return { cards, total };
}

/**
 * One card the tenant may see: its own action, or one it reviews for a team (the rule a decision
 * applies); else 404, as the approvals routes answer an id that is not theirs.
 */
export async function cardFor(ctx: TenantCtx, actionId: string): Promise<Card> {
  const row = (await q.actionOf(ctx.db, ctx.tenantId, actionId)) ?? (await approvalFor(ctx.db, ctx.tenantId, actionId));
  if (!row?.reviewable) throw new AppError('NOT_FOUND', `Approval ${actionId} not found`);
  return cardOf(ctx, row);
}
