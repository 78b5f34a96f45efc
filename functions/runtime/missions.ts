import type { z } from '@hono/zod-openapi';
import type { MissionStatus } from '../../schema/runtime';
import { changesSince, classify, rollbackMemories } from '../../shared/memory/rollback';
import type { TenantCtx } from '../../shared/platform/contract/context';
import type { DbOrTx } from '../../shared/platform/data/db';
import { conflict, notFound, validationError } from '../../shared/platform/contract/errors';
import { newId } from '../../shared/platform/contract/ids';
import type { PageInput } from '../../shared/platform/data/pagination';
import { type Work, write } from '../../shared/platform/data/unit-of-work';
import * as q from './queries';
import { CheckpointPaging, MissionPaging, type MissionBody, toCheckpointDto, toMissionDto } from './schemas';
import { agentFor } from './service';
import { assertTransition, FINAL, missionEvent, type Verb } from './transitions';

/** Missions, their lifecycle, checkpoints and rollback (docs/architecture.md#agent-runtime). */

export async function missionFor(ctx: TenantCtx, missionId: string, lock = false) {
  const mission = await q.missionOf(ctx.db, ctx.tenantId, missionId, lock);
  if (!mission) throw notFound('Mission');
  return mission;
}

/**
 * A mission for a registered agent: an unknown agent is 404 (it names nothing, as another
 * tenant's does), an archived one 409 CONFLICT; `allowed_capabilities` must be within the agent's
 * capabilities (400), and are the agent's when omitted.
 */
export async function createMission(ctx: TenantCtx, input: z.infer<typeof MissionBody>) {
  return write(ctx, async (work) => {
    const agent = await agentFor(work.ctx, input.agent_id, true);
    if (agent.status === 'archived') throw conflict(`Agent ${agent.agentId} is archived and takes no new missions`, { agent_status: agent.status });
    const allowed = input.allowed_capabilities ?? agent.capabilities;
    const outside = allowed.filter((c) => !agent.capabilities.includes(c));
    if (outside.length)
      throw validationError('allowed_capabilities', `not among the agent's capabilities (${agent.capabilities.join(', ') || 'none'}): ${outside.join(', ')}`);
    const mission = await q.insertMission(work.tx, {
      id: newId('mission'),
      tenantId: ctx.tenantId,
      agentId: agent.agentId,
      goal: input.goal,
      constraints: input.constraints,
      successCriteria: input.success_criteria,
      allowedCapabilities: allowed,
      status: 'queued',
      state: {},
      createdAt: ctx.now,
      updatedAt: ctx.now,
    });
    await work.audit({
      operation: 'mission.created',
      resourceType: 'mission',
      resourceId: mission.id,
      metadata: { agent_id: mission.agentId, goal: mission.goal, allowed_capabilities: allowed },
    });
    return toMissionDto(mission);
  });
}

export async function listMissions(ctx: TenantCtx, query: PageInput & { agent_id?: string; status?: MissionStatus }) {
  const { page, total } = await q.listMissions(ctx.db, ctx.tenantId, query, query);
  return { missions: page.map(toMissionDto), ...MissionPaging.meta(total, query, page.length) };
}

export async function getMission(ctx: TenantCtx, input: { missionId: string }) {
  return toMissionDto(await missionFor(ctx, input.missionId));
}

/**
 * Moves a mission along its lifecycle under its row lock. Starting or resuming needs its agent
 * active (409 naming `agent_status` otherwise). Returns the full record.
 */
export async function transition(ctx: TenantCtx, input: { missionId: string; verb: Verb; reason?: string; interventionId?: string }) {
  return write(ctx, async (work) => {
    const found = await q.missionForTransition(work.tx, ctx.tenantId, input.missionId);
    if (!found) throw notFound('Mission');
    const { mission, agentStatus } = found;
    const t = assertTransition(input.verb, mission.status);
    if ((input.verb === 'start' || input.verb === 'resume') && agentStatus && agentStatus !== 'active') {
      throw conflict(`Agent ${mission.agentId} is ${agentStatus}; ${input.verb} needs it active`, {
        agent_status: agentStatus,
        mission_status: mission.status,
      });
    }
    const now = ctx.now;
    const updated = await q.updateMission(work.tx, ctx.tenantId, mission.id, {
      status: t.to,
      updatedAt: now,
      ...(input.verb === 'start' ? { startedAt: now } : {}),
      ...(FINAL.includes(t.to) ? { endedAt: now } : {}),
    });
    await missionEvent(work, input.verb, {
      missionId: mission.id,
      agentId: mission.agentId,
      from: mission.status,
      to: t.to,
      reason: input.reason,
      interventionId: input.interventionId,
    });
    return toMissionDto(updated);
  });
}

const sameMission = (missionId: string, sent: string | undefined) => {
  if (sent !== undefined && sent !== missionId) throw validationError('mission_id', 'must be the mission of the path, or omitted');
};

/** A checkpoint of a mission that is not over (409 once completed, failed or cancelled). */
export async function createCheckpoint(ctx: TenantCtx, input: { missionId: string; mission_id?: string; label: string; state: Record<string, unknown> }) {
  return write(ctx, async (work) => {
    const mission = await missionFor(work.ctx, input.missionId, true);
    sameMission(mission.id, input.mission_id);
    if (FINAL.includes(mission.status))
      throw conflict(`Mission is ${mission.status}; checkpoints are taken while it is queued, running or paused`, { mission_status: mission.status });
    const checkpoint = await q.insertCheckpoint(work.tx, {
      id: newId('checkpoint'),
      tenantId: ctx.tenantId,
      missionId: mission.id,
      label: input.label,
      state: input.state,
      createdAt: ctx.now,
    });
    await work.audit({
      operation: 'checkpoint.created',
      resourceType: 'mission',
      resourceId: mission.id,
      metadata: { checkpoint_id: checkpoint.id, label: checkpoint.label },
    });
    return toCheckpointDto(checkpoint);
  });
}

export async function listCheckpoints(ctx: TenantCtx, input: PageInput & { missionId: string }) {
  const mission = await missionFor(ctx, input.missionId);
  const { page, total } = await q.listCheckpoints(ctx.db, ctx.tenantId, mission.id, input);
  return { checkpoints: page.map(toCheckpointDto), ...CheckpointPaging.meta(total, input, page.length) };
}

/** A checkpoint of the mission (404 otherwise), or with `checkpointId` null its latest (409 when it has none). */
async function checkpointFor(db: DbOrTx, tenantId: string, mission: q.MissionRow, checkpointId: string | null) {
  const checkpoint = checkpointId ? await q.checkpointOf(db, tenantId, mission.id, checkpointId) : await q.latestCheckpoint(db, tenantId, mission.id);
  if (checkpoint) return checkpoint;
  if (checkpointId) throw notFound('Checkpoint');
  throw conflict('Mission has no checkpoint to roll back to', { mission_status: mission.status });
}

/**
 * Rolls a mission back to one of its checkpoints (in any status; the status stays): its `state`
 * becomes the checkpoint's, later checkpoints are deleted, and the why is audited and announced
 * (`mission.rolled_back`). With `revertMemories`, the memory writes of the mission's agent after
 * the checkpoint are undone in the same transaction by the rollback engine (a rollback scoped to
 * the agent: its audit entry, history row, `rollback.completed` event and monthly count).
 * `checkpointId` null takes the latest checkpoint (409 when there is none).
 */
export async function rollbackMission(
  work: Work<TenantCtx>,
  input: { missionId: string; mission_id?: string; checkpointId: string | null; reason?: string | null; revertMemories: boolean; interventionId?: string },
) {
  const { ctx, tx } = work;
  const mission = await missionFor(ctx, input.missionId, true);
  sameMission(mission.id, input.mission_id);
  const checkpoint = await checkpointFor(tx, ctx.tenantId, mission, input.checkpointId);
  const discarded = await q.discardCheckpointsAfter(tx, ctx.tenantId, mission.id, checkpoint.seq);
  const updated = await q.updateMission(tx, ctx.tenantId, mission.id, { state: checkpoint.state, updatedAt: ctx.now });
  const reason = input.reason || null;
  const facts = {
    mission_id: mission.id,
    agent_id: mission.agentId,
    checkpoint_id: checkpoint.id,
    label: checkpoint.label,
    reason,
    ...(input.interventionId ? { intervention_id: input.interventionId } : {}),
  };
  let memory: { rollback_id: string; removed: number; restored: number; reverted: number } | null = null;
  if (input.revertMemories) {
    const rollbackId = newId('rollback');
    const counts = await rollbackMemories(work, { rollbackId, target: checkpoint.createdAt, agentId: mission.agentId, meta: { scope: 'agent', ...facts } });
    memory = { rollback_id: rollbackId, removed: counts.removed, restored: counts.restored, reverted: counts.reverted };
  }
  const reverted = memory ? memory.removed + memory.restored + memory.reverted : 0;
  const summary = { ...facts, checkpoints_discarded: discarded, memories_reverted: reverted, rollback_id: memory?.rollback_id ?? null };
  await work.audit({ operation: 'mission.rolled_back', resourceType: 'mission', resourceId: mission.id, metadata: summary });
  await work.event('mission.rolled_back', summary);
  return {
    mission: toMissionDto(updated),
    checkpoint_id: checkpoint.id,
    reason,
    checkpoints_discarded: discarded,
    memories_reverted: reverted,
    memory_rollback: memory,
  };
}

/** What a rollback to the checkpoint would do, with `revert_memories` and without; writes nothing. */
export async function previewRollback(ctx: TenantCtx, input: { missionId: string; checkpoint_id?: string }) {
  const mission = await missionFor(ctx, input.missionId);
  const checkpoint = await checkpointFor(ctx.db, ctx.tenantId, mission, input.checkpoint_id ?? null);
  const discarded = await q.countCheckpointsAfter(ctx.db, ctx.tenantId, mission.id, checkpoint.seq);
  const plan = classify(await changesSince(ctx.db, ctx.tenantId, checkpoint.createdAt, false, mission.agentId));
  const missing = plan.restore.filter((c) => !c.pastHasEmbedding).length;
  const warnings = [
    ...(missing ? [`${missing} memories have no stored embedding for their state at the checkpoint and cannot be restored.`] : []),
    ...(plan.remove.length
      ? [`${plan.remove.length} memories the agent created after the checkpoint will be removed (a rollback to a time before this one brings them back).`]
      : []),
  ];
  return {
    mission_id: mission.id,
    checkpoint_id: checkpoint.id,
    target_timestamp: checkpoint.createdAt.toISOString(),
    state: checkpoint.state,
    checkpoints_discarded: discarded,
    memories: { removed: plan.remove.length, restored: plan.restore.length - missing, reverted: plan.revert.length },
    memories_reverted: plan.remove.length + plan.restore.length - missing + plan.revert.length,
    warnings,
  };
}

export async function rollback(
  ctx: TenantCtx,
  input: { missionId: string; mission_id?: string; checkpoint_id: string; reason?: string; revert_memories: boolean },
) {
  return write(ctx, (work) => rollbackMission(work, { ...input, checkpointId: input.checkpoint_id, revertMemories: input.revert_memories }));
}
