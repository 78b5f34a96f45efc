import type { TenantCtx } from '../../shared/platform/contract/context';
import { AppError } from '../../shared/platform/contract/errors';
import { approvalsVerb } from '../actions/verbs';

/**
 * What an inbox card shows of an action held for review: an entry of `GET /v1/approvals`
 * (actions.approvals) as the verb answers it, so the card shows what the API shows, under the same
 * scope, with the k-of-n count the verb reads for the whole page at once.
 */
export type Card = Awaited<ReturnType<typeof approvalsVerb>>['approvals'][number];

/** A tab of the inbox: a status of the tenant's own queue, or `team` (what waits for its review). */
export async function cardsIn(ctx: TenantCtx, status: Card['status'] | 'team', limit: number) {
  const query = status === 'team' ? { scope: 'team', status: 'pending_review', limit } : { status, limit };
  const { approvals, total } = await approvalsVerb(ctx, query);
  return { cards: approvals, total };
}

/**
 * One card the tenant may see: its own action, or one it reviews for a team (the rule a decision
 * applies); else 404, as the approvals routes answer an id that is not theirs.
 */
export async function cardFor(ctx: TenantCtx, actionId: string): Promise<Card> {
  for (const scope of ['own', 'team'] as const) {
    const [card] = (await approvalsVerb(ctx, { approval_id: actionId, scope, limit: 1 })).approvals;
    if (card) return card;
  }
  throw new AppError('NOT_FOUND', `Approval ${actionId} not found`);
}
