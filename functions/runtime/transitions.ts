import type { MissionStatus } from '../../schema/runtime';
import type { EventType } from '../../shared/jobs/events';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { conflict } from '../../shared/platform/contract/errors';
import type { Work } from '../../shared/platform/data/unit-of-work';

/**
 * The mission lifecycle (docs/architecture.md#agent-runtime): `POST /v1/missions/{id}/<verb>` moves a mission
 * from one of `from` to `to`; anything else is 409 CONFLICT naming the current status. Cancelled,
 * completed and failed are final.
 */
export const TRANSITIONS = {
  start: { from: ['queued'], to: 'running', event: 'mission.started' },
  pause: { from: ['running'], to: 'paused', event: 'mission.paused' },
  resume: { from: ['paused'], to: 'running', event: 'mission.resumed' },
  complete: { from: ['running', 'paused'], to: 'completed', event: 'mission.completed' },
  fail: { from: ['queued', 'running', 'paused'], to: 'failed', event: 'mission.failed' },
  cancel: { from: ['queued', 'running', 'paused'], to: 'cancelled', event: 'mission.cancelled' },
} as const satisfies Record<string, { from: readonly MissionStatus[]; to: MissionStatus; event: EventType }>;

export type Verb = keyof typeof TRANSITIONS;
export const VERBS = Object.keys(TRANSITIONS) as Verb[];
export const FINAL: readonly MissionStatus[] = ['completed', 'failed', 'cancelled'];

/** 409 CONFLICT for a verb the mission's status does not allow; `mission_status` names the status (`status` is the HTTP status). */
export function assertTransition(verb: Verb, status: MissionStatus) {
  const t = TRANSITIONS[verb];
  if (!(t.from as readonly MissionStatus[]).includes(status)) {
    const final = FINAL.includes(status) ? `; ${status} is final` : '';
    throw conflict(`Mission is ${status}${final}: ${verb} needs it ${t.from.join(' or ')}`, { mission_status: status, allowed_from: t.from });
  }
  return t;
}

/** The audit entry and the event of a transition, in the caller's transaction. */
export async function missionEvent(
  work: Work<TenantCtx>,
  verb: Verb,
  m: { missionId: string; agentId: string; from: MissionStatus; to: MissionStatus; reason?: string; interventionId?: string },
) {
  const facts = {
    mission_id: m.missionId,
    agent_id: m.agentId,
    status: m.to,
    previous_status: m.from,
    ...(m.reason ? { reason: m.reason } : {}),
    ...(m.interventionId ? { intervention_id: m.interventionId } : {}),
  };
  await work.audit({ operation: TRANSITIONS[verb].event, resourceType: 'mission', resourceId: m.missionId, metadata: facts });
  await work.event(TRANSITIONS[verb].event, facts);
}
