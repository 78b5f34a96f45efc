import { recordDecision } from '../control/decide';
import type { InterventionEffect } from '../../schema/runtime';
import type { TenantCtx } from '../platform/contract/context';
import type { Work } from '../platform/data/unit-of-work';

/** An `approve` or `reject` intervention on a pending action, as the runtime hands it over. */
export interface InterventionDecision {
  actionId: string;
  decision: 'approve' | 'reject';
  rationale: string | null;
  interventionId: string;
  missionId: string | null;
  agentId: string | null;
  /** `ROLLBACK`, to approve a destructive action in solo mode. */
  confirmation?: string;
}

/**
 * An `approve` or `reject` intervention decides the pending action it names through the approval
 * rules (shared/control/decide.ts), inside the intervention's own unit of work: same transaction,
 * same audit chain. `reject` is a `deny`; the rationale is the decision's reason; the deciding key's
 * e-mail is the approver. Errors (unknown action 404, already decided 409, too early 409, a
 * destructive solo approval without `confirmation` 400) reach the caller as they are, and nothing
 * of the intervention is kept.
 */
export async function decideActionFromIntervention(work: Work<TenantCtx>, input: InterventionDecision): Promise<InterventionEffect> {
  const decided = await recordDecision(work, {
    approvalId: input.actionId,
    decision: input.decision === 'approve' ? 'approve' : 'deny',
    reason: input.rationale,
    approverId: work.ctx.auth.email,
    confirmation: input.confirmation,
  });
  return { type: 'decided', action_id: decided.approval_id, decision: decided.decision, status: decided.status };
}
