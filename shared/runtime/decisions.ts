import type { InterventionEffect } from '../../schema/runtime';
import type { TenantCtx } from '../platform/context';
import type { Work } from '../platform/unit-of-work';

/** An `approve` or `reject` intervention on a pending action, as the runtime hands it over. */
export interface InterventionDecision {
  actionId: string;
  decision: 'approve' | 'reject';
  rationale: string | null;
  interventionId: string;
  missionId: string | null;
  agentId: string | null;
}

/**
 * THE SEAM between supervisor interventions and the approvals engine (issue 13, item 5). An
 * `approve`/`reject` intervention calls this inside its own unit of work (`work`: same transaction,
 * same audit chain), with the action it names. Wire it to the approval decision (spec §3.3:
 * approve → approved, reject → denied, through the approval-mode rules; decisions are immutable)
 * and return what happened, e.g. `{ type: 'decided', action_id, decision, status }`; errors thrown
 * here (unknown action 404, already decided 409) reach the caller as they are.
 *
 * Until it is wired it decides nothing and returns null: the intervention is recorded with
 * `effect: null`.
 */
export async function decideActionFromIntervention(_work: Work<TenantCtx>, _input: InterventionDecision): Promise<InterventionEffect | null> {
  return null;
}
