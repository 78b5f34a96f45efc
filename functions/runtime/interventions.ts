import type { z } from '@hono/zod-openapi';
import type { InterventionEffect, InterventionType } from '../../schema/runtime';
import { decideActionFromIntervention } from '../../shared/runtime/decisions';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { validationError } from '../../shared/platform/contract/errors';
import { newId } from '../../shared/platform/contract/ids';
import type { PageInput } from '../../shared/platform/data/pagination';
import { type Work, write } from '../../shared/platform/data/unit-of-work';
import { missionFor, rollbackMission, transition } from './missions';
import * as q from './queries';
import { type InterventionBody, InterventionPaging, toInterventionDto } from './schemas';
import { agentFor } from './service';

/**
 * Supervisor interventions (`runtime.interventions.create`): recorded, audited and announced
 * (`intervention.recorded`), and they act, in the same transaction: `pause` pauses the mission,
 * `rollback_request` rolls it back to its latest checkpoint, `escalate` and `reroute` emit their
 * events, `approve`/`reject` decide the named action through the approval rules (shared/runtime/decisions.ts), `annotate`
 * only records. `effect` on the record says what happened.
 */
export async function recordIntervention(ctx: TenantCtx, input: z.infer<typeof InterventionBody>) {
  return write(ctx, async (work) => {
    const mission = input.mission_id ? await missionFor(work.ctx, input.mission_id, true) : null;
    if (input.agent_id) {
      await agentFor(work.ctx, input.agent_id);
      if (mission && mission.agentId !== input.agent_id) throw validationError('agent_id', `is not the agent of mission ${mission.id} (${mission.agentId})`);
    }
    const id = newId('intervention');
    const agentId = input.agent_id ?? mission?.agentId ?? null;
    const rationale = input.rationale || null;
    const effect = await act(work, input.intervention_type, {
      id,
      missionId: mission?.id ?? null,
      agentId,
      actionId: input.action_id ?? null,
      rationale,
      confirmation: input.confirmation,
    });
    const row = await q.insertIntervention(work.tx, {
      id,
      tenantId: ctx.tenantId,
      interventionType: input.intervention_type,
      missionId: mission?.id ?? null,
      actionId: input.action_id ?? null,
      agentId,
      rationale,
      effect,
      createdAt: ctx.now,
    });
    const dto = toInterventionDto(row);
    await work.audit({ operation: 'intervention.recorded', resourceType: 'intervention', resourceId: id, metadata: { ...dto } });
    await work.event('intervention.recorded', { ...dto });
    return dto;
  });
}

async function act(
  work: Work<TenantCtx>,
  type: InterventionType,
  i: { id: string; missionId: string | null; agentId: string | null; actionId: string | null; rationale: string | null; confirmation?: string },
): Promise<InterventionEffect | null> {
  switch (type) {
    case 'pause': {
      const mission = await transition(work.ctx, { missionId: i.missionId!, verb: 'pause', reason: i.rationale ?? undefined, interventionId: i.id });
      return { type: 'paused', mission_status: mission.status };
    }
    case 'rollback_request': {
      const done = await rollbackMission(work, {
        missionId: i.missionId!,
        checkpointId: null,
        reason: i.rationale,
        revertMemories: false,
        interventionId: i.id,
      });
      return { type: 'rolled_back', checkpoint_id: done.checkpoint_id, checkpoints_discarded: done.checkpoints_discarded };
    }
    case 'escalate':
    case 'reroute': {
      const event = type === 'escalate' ? 'intervention.escalated' : 'intervention.rerouted';
      await work.event(event, { intervention_id: i.id, mission_id: i.missionId, agent_id: i.agentId, action_id: i.actionId, rationale: i.rationale });
      return { type: type === 'escalate' ? 'escalated' : 'rerouted', event };
    }
    case 'approve':
    case 'reject':
      return decideActionFromIntervention(work, {
        actionId: i.actionId!,
        decision: type,
        rationale: i.rationale,
        interventionId: i.id,
        missionId: i.missionId,
        agentId: i.agentId,
        confirmation: i.confirmation,
      });
    case 'annotate':
      return null;
  }
}

export async function listInterventions(ctx: TenantCtx, query: PageInput & { mission_id?: string; agent_id?: string; intervention_type?: InterventionType }) {
  const { page, total } = await q.listInterventions(ctx.db, ctx.tenantId, query, query);
  return { interventions: page.map(toInterventionDto), ...InterventionPaging.meta(total, query, page.length) };
}
