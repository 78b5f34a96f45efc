import type { z } from '@hono/zod-openapi';
import type { AgentStatus } from '../../schema/runtime';
import { validInput } from '../../shared/platform/http/app';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { AppError, conflict, notFound } from '../../shared/platform/contract/errors';
import { newId } from '../../shared/platform/contract/ids';
import type { PageInput } from '../../shared/platform/data/pagination';
import { type Work, write } from '../../shared/platform/data/unit-of-work';
import { missionEvent } from './transitions';
import * as q from './queries';
import { AgentBody, AgentPaging, AgentPatch, CapabilityBody, CapabilityPaging, type MissionSummaryDto, toAgentDto, toCapabilityDto } from './schemas';

/**
 * Agents and capability packs (docs/architecture.md#agent-runtime). Every write returns the
 * full record and is audited.
 */

/** The create bodies are checked here too, so any caller (an import) gets the route's refusals. */
export async function createCapability(ctx: TenantCtx, body: z.input<typeof CapabilityBody>) {
  const input = validInput(CapabilityBody, body);
  return write(ctx, async (work) => {
    const pack = await q.insertCapability(work.tx, {
      id: newId('capability'),
      tenantId: ctx.tenantId,
      name: input.name,
      description: input.description || null,
      tools: input.tools,
      riskLevels: input.risk_levels,
      createdAt: ctx.now,
    });
    if (!pack) throw conflict(`A capability pack named ${input.name} exists already`);
    await work.audit({
      operation: 'capability.created',
      resourceType: 'capability',
      resourceId: pack.id,
      metadata: { name: pack.name, tools: pack.tools.map((t) => t.name), risk_levels: pack.riskLevels },
    });
    return toCapabilityDto(pack);
  });
}

export async function listCapabilities(ctx: TenantCtx, query: PageInput) {
  const { page, total } = await q.listCapabilities(ctx.db, ctx.tenantId, query);
  return { capabilities: page.map(toCapabilityDto), ...CapabilityPaging.meta(total, query, page.length) };
}

/** 404 naming the capability packs of `names` the tenant does not have. */
export async function assertCapabilities(ctx: TenantCtx, names: string[]) {
  const known = await q.existingCapabilities(ctx.db, ctx.tenantId, names);
  const missing = names.filter((n) => !known.has(n));
  if (missing.length)
    throw new AppError('NOT_FOUND', `Capability pack not found: ${missing.join(', ')}`, {
      details: [{ path: 'capabilities', message: `unknown capability packs: ${missing.join(', ')}` }],
    });
}

async function withActive(ctx: TenantCtx, agents: q.AgentRow[]) {
  const active = await q.activeMissionsOf(
    ctx.db,
    ctx.tenantId,
    agents.map((a) => a.agentId),
  );
  const byAgent = new Map<string, MissionSummaryDto[]>();
  for (const { agentId, ...m } of active) byAgent.set(agentId, [...(byAgent.get(agentId) ?? []), m]);
  return agents.map((a) => toAgentDto(a, byAgent.get(a.agentId) ?? []));
}

export async function agentFor(ctx: TenantCtx, agentId: string, lock = false) {
  const agent = await q.agentOf(ctx.db, ctx.tenantId, agentId, lock);
  if (!agent) throw notFound('Agent');
  return agent;
}

export async function createAgent(ctx: TenantCtx, body: z.input<typeof AgentBody>) {
  const input = validInput(AgentBody, body);
  return write(ctx, async (work) => {
    await assertCapabilities(work.ctx, input.capabilities);
    const agent = await q.insertAgent(work.tx, {
      tenantId: ctx.tenantId,
      agentId: input.agent_id ?? newId('agent'),
      name: input.name,
      description: input.description || null,
      provider: input.provider,
      model: input.model,
      instructions: input.instructions || null,
      capabilities: input.capabilities,
      status: 'active',
      createdAt: ctx.now,
      updatedAt: ctx.now,
    });
    if (!agent) throw conflict(`An agent with agent_id ${input.agent_id} exists already`, { agent_id: input.agent_id });
    await work.audit({
      operation: 'agent.created',
      resourceType: 'agent',
      resourceId: agent.agentId,
      metadata: { name: agent.name, provider: agent.provider, model: agent.model, capabilities: agent.capabilities },
    });
    return toAgentDto(agent, []);
  });
}

/**
 * An agent of a bundle (`portability.import`): created as POST /v1/agents creates it, then given
 * its exported status; null when the tenant has an agent of that id already (nothing written).
 */
export async function restoreAgent(ctx: TenantCtx, body: z.input<typeof AgentBody> & { status?: unknown }): Promise<string | null> {
  const status = body.status === undefined ? undefined : validInput(AgentPatch, { status: body.status }).status;
  return write(ctx, async (work) => {
    const created = await createAgent(work.ctx, body).catch((err: unknown) =>
      err instanceof AppError && err.code === 'CONFLICT' ? null : Promise.reject(err),
    );
    if (created && status && status !== created.status) await updateAgent(work.ctx, { agentId: created.agent_id, status });
    return created?.agent_id ?? null;
  });
}

/** A capability pack of a bundle: created as POST /v1/capabilities creates it; null when one of that name exists. */
export async function restoreCapability(ctx: TenantCtx, body: z.input<typeof CapabilityBody>): Promise<string | null> {
  return createCapability(ctx, body).then(
    (pack) => pack.capability_id,
    (err: unknown) => (err instanceof AppError && err.code === 'CONFLICT' ? null : Promise.reject(err)),
  );
}

export async function listAgents(ctx: TenantCtx, query: PageInput & { status?: AgentStatus }) {
  const { page, total } = await q.listAgents(ctx.db, ctx.tenantId, query, query);
  return { agents: await withActive(ctx, page), ...AgentPaging.meta(total, query, page.length) };
}

export async function getAgent(ctx: TenantCtx, input: { agentId: string }) {
  const [dto] = await withActive(ctx, [await agentFor(ctx, input.agentId)]);
  return dto;
}

/** Cancels the agent's active missions in the caller's transaction, each with its event. */
async function cancelMissionsOf(work: Work<TenantCtx>, agentId: string, why: string) {
  const cancelled = await q.cancelActiveMissions(work.tx, work.ctx.tenantId, agentId, work.ctx.now);
  for (const m of cancelled) await missionEvent(work, 'cancel', { missionId: m.id, agentId, from: m.status, to: 'cancelled', reason: why });
  return cancelled.map((m) => m.id);
}

/** Sets an agent's status; archiving cancels its active missions (an archived agent gets no new ones). */
export async function updateAgent(ctx: TenantCtx, input: { agentId: string; status: AgentStatus }) {
  return write(ctx, async (work) => {
    const before = await agentFor(work.ctx, input.agentId, true);
    const agent = await q.setAgentStatus(work.tx, ctx.tenantId, input.agentId, input.status, ctx.now);
    const cancelled = input.status === 'archived' && before.status !== 'archived' ? await cancelMissionsOf(work, agent.agentId, 'agent archived') : [];
    await work.audit({
      operation: 'agent.updated',
      resourceType: 'agent',
      resourceId: agent.agentId,
      metadata: { status: agent.status, previous_status: before.status, missions_cancelled: cancelled },
    });
    const [dto] = await withActive(work.ctx, [agent]);
    return dto;
  });
}

/** Deletes an agent for good, cancelling its active missions in the same transaction. */
export async function deleteAgent(ctx: TenantCtx, input: { agentId: string }) {
  return write(ctx, async (work) => {
    const agent = await agentFor(work.ctx, input.agentId, true);
    const cancelled = await cancelMissionsOf(work, agent.agentId, 'agent deleted');
    await q.deleteAgent(work.tx, ctx.tenantId, agent.agentId);
    await work.audit({
      operation: 'agent.deleted',
      resourceType: 'agent',
      resourceId: agent.agentId,
      metadata: { name: agent.name, missions_cancelled: cancelled },
    });
    return { deleted: true as const, agent_id: agent.agentId, missions_cancelled: cancelled };
  });
}
