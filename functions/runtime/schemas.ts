import { z } from '@hono/zod-openapi';
import {
  AGENT_PROVIDERS,
  AGENT_STATUSES,
  INTERVENTION_TYPES,
  MISSION_STATUSES,
  RISK_LEVELS,
  type runtimeAgents,
  type runtimeCapabilities,
  type runtimeCheckpoints,
  type runtimeInterventions,
  type runtimeMissions,
} from '../../schema/runtime';
import { idPattern } from '../../shared/platform/contract/ids';
import { Metadata, PrefixedId } from '../../shared/platform/contract/params';
import { PageQuery, paging } from '../../shared/platform/data/pagination';
import { isoOrNull } from '../../shared/platform/contract/time';

const TIME = '2026-11-15T12:00:00.000Z';
const AGENT = 'release-bot';
const MISSION = idPattern('mission').example;
const CHECKPOINT = idPattern('checkpoint').example;
const ID_CHARS = /^[A-Za-z0-9][A-Za-z0-9._:@-]*$/;
const PACK_CHARS = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** An agent id: the caller's own (letters, digits, `._:@-`, up to 128) or a generated `agt_...`; unique per tenant. */
export const AgentId = (description = 'The agent') =>
  z
    .string()
    .min(1)
    .max(128)
    .regex(ID_CHARS, 'must start with a letter or digit and hold only letters, digits and . _ : @ -')
    .openapi({ description, example: AGENT });
const PackName = z
  .string()
  .min(1)
  .max(64)
  .regex(PACK_CHARS, 'must start with a letter or digit and hold only letters, digits and . _ -')
  .openapi({ example: 'github-ops' });
const ToolName = z
  .string()
  .min(1)
  .max(128)
  .regex(ID_CHARS, 'must start with a letter or digit and hold only letters, digits and . _ : @ -')
  .openapi({ example: 'github.create_issue' });
const Text = (max: number, description: string, example: string) => z.string().trim().max(max).openapi({ description, example });
const Lines = (description: string, example: string[]) =>
  z
    .array(z.string().trim().min(1).max(2_000))
    .max(50)
    .default([])
    .openapi({ description: `${description} Up to 50 items of 1 to 2,000 characters.`, example });
const uniqueList = <T extends z.ZodType<string[]>>(list: T) => list.refine((l) => new Set(l).size === l.length, 'must not repeat a name');

// ---- capability packs

const ToolSchema = z
  .object({ name: ToolName, description: z.string().trim().min(1).max(2_000).openapi({ example: 'Open an issue in a repository' }) })
  .openapi('RuntimeTool', { description: 'A tool: an action (`github.create_issue`) or a whole connector (`github` allows every `github.*` action)' });

export const CapabilityBody = z
  .object({
    name: PackName.openapi({ description: 'Unique per account; agents name their packs by it' }),
    description: Text(2_000, 'What the pack is for', 'Triage issues on GitHub').optional(),
    tools: z.array(ToolSchema).max(200).default([]).openapi({ description: 'Up to 200 tools, each named once' }),
    risk_levels: z
      .record(z.string(), z.enum(RISK_LEVELS))
      .default({})
      .openapi({
        description: 'Risk of each tool: tool name → `low`, `medium`, `high` or `critical`; every key must name one of `tools`',
        example: { 'github.create_issue': 'medium' },
      }),
  })
  .superRefine((pack, ctx) => {
    const names = pack.tools.map((t) => t.name);
    if (new Set(names).size !== names.length) ctx.addIssue({ code: 'custom', path: ['tools'], message: 'must not name a tool twice' });
    for (const tool of Object.keys(pack.risk_levels)) {
      if (!names.includes(tool))
        ctx.addIssue({ code: 'custom', path: ['risk_levels', tool], message: `names no tool of the pack (tools: ${names.join(', ') || 'none'})` });
    }
  })
  .openapi('RuntimeCapabilityInput', {
    example: {
      name: 'github-ops',
      description: 'Triage issues on GitHub',
      tools: [
        { name: 'github.create_issue', description: 'Open an issue in a repository' },
        { name: 'github.comment', description: 'Comment on an issue' },
      ],
      risk_levels: { 'github.create_issue': 'medium', 'github.comment': 'low' },
    },
  });

export const Capability = z
  .object({
    capability_id: z.string().openapi({ example: idPattern('capability').example }),
    name: z.string().openapi({ example: 'github-ops' }),
    description: z.string().nullable().openapi({ example: 'Triage issues on GitHub' }),
    tools: z.array(ToolSchema),
    risk_levels: z.record(z.string(), z.enum(RISK_LEVELS)).openapi({ example: { 'github.create_issue': 'medium' } }),
    created_at: z.string().openapi({ example: TIME }),
  })
  .openapi('RuntimeCapability');

export const CapabilityListQuery = PageQuery({ max: 1000, default: 100 });
export const CapabilityPaging = paging({ totals: ['total'], hasMore: true });
export const CapabilityList = z.object({ capabilities: z.array(Capability), ...CapabilityPaging.fields }).openapi('RuntimeCapabilityList');

export const toCapabilityDto = (r: typeof runtimeCapabilities.$inferSelect) => ({
  capability_id: r.id,
  name: r.name,
  description: r.description,
  tools: r.tools,
  risk_levels: r.riskLevels,
  created_at: r.createdAt.toISOString(),
});

// ---- agents

export const AgentParams = z.object({ agent_id: AgentId().openapi({ param: { name: 'agent_id', in: 'path' }, example: AGENT }) });

export const AgentBody = z
  .object({
    name: z.string().trim().min(1).max(100).openapi({ description: '1 to 100 characters', example: 'Release bot' }),
    agent_id: AgentId(
      'Your id for the agent (the `agent_id` it writes memories, traces and actions under); `agt_...` generated when omitted; unique per account',
    ).optional(),
    description: Text(2_000, 'What the agent does', 'Cuts releases and files their follow-up issues').optional(),
    provider: z.enum(AGENT_PROVIDERS).openapi({ description: 'Required (no default since the release that made provider and model required)' }),
    model: z.string().trim().min(1).max(200).openapi({ description: 'Required, as the provider names it', example: 'gpt-4.1' }),
    instructions: Text(20_000, 'Standing instructions', 'Never push to main.').optional(),
    capabilities: uniqueList(z.array(PackName).max(50))
      .default([])
      .openapi({ description: 'Names of capability packs (POST /v1/capabilities) the agent may use; an unknown name is 404' }),
  })
  .openapi('RuntimeAgentInput', {
    example: {
      name: 'Release bot',
      agent_id: AGENT,
      description: 'Cuts releases',
      provider: 'openai',
      model: 'gpt-4.1',
      instructions: 'Never push to main.',
      capabilities: [],
    },
  });

export const AgentPatch = z
  .object({ status: z.enum(AGENT_STATUSES).openapi({ description: "`archived` cancels the agent's active missions; an archived agent gets no new missions" }) })
  .openapi('RuntimeAgentPatch', { example: { status: 'paused' } });

const MissionSummary = z.object({
  mission_id: z.string().openapi({ example: MISSION }),
  goal: z.string().openapi({ example: 'Ship release 1.4' }),
  status: z.enum(MISSION_STATUSES),
});

export const Agent = z
  .object({
    agent_id: z.string().openapi({ example: AGENT }),
    name: z.string().openapi({ example: 'Release bot' }),
    description: z.string().nullable().openapi({ example: 'Cuts releases' }),
    provider: z.enum(AGENT_PROVIDERS),
    model: z.string().openapi({ example: 'gpt-4.1' }),
    instructions: z.string().nullable().openapi({ example: 'Never push to main.' }),
    capabilities: z.array(z.string()).openapi({ example: ['github-ops'] }),
    status: z.enum(AGENT_STATUSES),
    active_missions: z.array(MissionSummary).openapi({ description: 'Missions queued, running or paused, newest first' }),
    created_at: z.string().openapi({ example: TIME }),
    updated_at: z.string().openapi({ example: TIME }),
  })
  .openapi('RuntimeAgent');

export const AgentListQuery = PageQuery({ max: 1000, default: 100 }).extend({
  status: z.enum(AGENT_STATUSES).optional().openapi({ description: 'Only agents in this status' }),
});
export const AgentPaging = paging({ totals: ['total'], hasMore: true });
export const AgentList = z.object({ agents: z.array(Agent), ...AgentPaging.fields }).openapi('RuntimeAgentList');

export const DeletedAgent = z
  .object({
    deleted: z.literal(true),
    agent_id: z.string().openapi({ example: AGENT }),
    missions_cancelled: z.array(z.string()).openapi({ description: 'The active missions the delete cancelled', example: [MISSION] }),
  })
  .openapi('RuntimeAgentDeleted');

export type MissionSummaryDto = z.infer<typeof MissionSummary>;
export const toAgentDto = (r: typeof runtimeAgents.$inferSelect, active: MissionSummaryDto[]) => ({
  agent_id: r.agentId,
  name: r.name,
  description: r.description,
  provider: r.provider,
  model: r.model,
  instructions: r.instructions,
  capabilities: r.capabilities,
  status: r.status,
  active_missions: active,
  created_at: r.createdAt.toISOString(),
  updated_at: r.updatedAt.toISOString(),
});

// ---- missions

export const MissionParams = z.object({ mission_id: PrefixedId('mission', 'The mission') });

export const MissionBody = z
  .object({
    agent_id: AgentId('A registered agent (404 when unknown; 409 when archived)'),
    goal: z.string().trim().min(1).max(10_000).openapi({ description: 'What the mission is to achieve, 1 to 10,000 characters', example: 'Ship release 1.4' }),
    constraints: Lines('Limits the agent must respect.', ['No force pushes']),
    success_criteria: Lines('How to tell the mission succeeded.', ['Tag v1.4 exists']),
    allowed_capabilities: uniqueList(z.array(PackName).max(50))
      .optional()
      .openapi({ description: "Capability packs the mission may use, a subset of the agent's (400 otherwise); the agent's when omitted", example: [] }),
  })
  .openapi('RuntimeMissionInput', {
    example: { agent_id: AGENT, goal: 'Ship release 1.4', constraints: ['No force pushes'], success_criteria: ['Tag v1.4 exists'] },
  });

export const Mission = z
  .object({
    mission_id: z.string().openapi({ example: MISSION }),
    agent_id: z.string().openapi({ example: AGENT }),
    goal: z.string().openapi({ example: 'Ship release 1.4' }),
    constraints: z.array(z.string()).openapi({ example: ['No force pushes'] }),
    success_criteria: z.array(z.string()).openapi({ example: ['Tag v1.4 exists'] }),
    allowed_capabilities: z.array(z.string()).openapi({ example: ['github-ops'] }),
    status: z.enum(MISSION_STATUSES),
    state: z
      .record(z.string(), z.unknown())
      .openapi({ description: 'The progress of the latest checkpoint rolled back to; `{}` until then', example: { step: 3 } }),
    created_at: z.string().openapi({ example: TIME }),
    updated_at: z.string().openapi({ example: TIME }),
    started_at: z.string().nullable().openapi({ example: TIME }),
    ended_at: z.string().nullable().openapi({ description: 'When it completed, failed or was cancelled', example: null }),
  })
  .openapi('RuntimeMission');

export const MissionListQuery = PageQuery({ max: 1000, default: 100 }).extend({
  agent_id: AgentId('Only missions of this agent').optional(),
  status: z.enum(MISSION_STATUSES).optional().openapi({ description: 'Only missions in this status' }),
});
export const MissionPaging = paging({ totals: ['total'], hasMore: true });
export const MissionList = z.object({ missions: z.array(Mission), ...MissionPaging.fields }).openapi('RuntimeMissionList');

export const toMissionDto = (r: typeof runtimeMissions.$inferSelect) => ({
  mission_id: r.id,
  agent_id: r.agentId,
  goal: r.goal,
  constraints: r.constraints,
  success_criteria: r.successCriteria,
  allowed_capabilities: r.allowedCapabilities,
  status: r.status,
  state: r.state,
  created_at: r.createdAt.toISOString(),
  updated_at: r.updatedAt.toISOString(),
  started_at: isoOrNull(r.startedAt),
  ended_at: isoOrNull(r.endedAt),
});

// ---- checkpoints and rollback

const SameMission = PrefixedId('mission', 'Optional; when sent it must be the mission of the path (400 otherwise)').optional();

export const CheckpointBody = z
  .object({
    mission_id: SameMission,
    label: z.string().trim().min(1).max(200).openapi({ description: '1 to 200 characters', example: 'tests green' }),
    state: Metadata("The agent's progress at this point, restored by a rollback to the checkpoint; `{}` when absent.", {
      step: 3,
      branch: 'release/1.4',
    }).default({}),
  })
  .openapi('RuntimeCheckpointInput', { example: { label: 'tests green', state: { step: 3, branch: 'release/1.4' } } });

export const Checkpoint = z
  .object({
    checkpoint_id: z.string().openapi({ example: CHECKPOINT }),
    mission_id: z.string().openapi({ example: MISSION }),
    label: z.string().openapi({ example: 'tests green' }),
    state: z.record(z.string(), z.unknown()).openapi({ example: { step: 3 } }),
    created_at: z.string().openapi({ example: TIME }),
  })
  .openapi('RuntimeCheckpoint');

export const CheckpointListQuery = PageQuery({ max: 1000, default: 100 });
export const CheckpointPaging = paging({ totals: ['total'], hasMore: true });
export const CheckpointList = z.object({ checkpoints: z.array(Checkpoint), ...CheckpointPaging.fields }).openapi('RuntimeCheckpointList');

export const toCheckpointDto = (r: typeof runtimeCheckpoints.$inferSelect) => ({
  checkpoint_id: r.id,
  mission_id: r.missionId,
  label: r.label,
  state: r.state,
  created_at: r.createdAt.toISOString(),
});

export const RollbackBody = z
  .object({
    mission_id: SameMission,
    checkpoint_id: PrefixedId('checkpoint', 'A checkpoint of this mission (404 otherwise)'),
    reason: Text(2_000, 'Why, kept in the audit trail and the event', 'Opened duplicate issues').optional(),
    revert_memories: z.boolean().default(false).openapi({
      description:
        "Also undo the memory writes of the mission's agent after the checkpoint (created → removed, updated and deleted → restored), as a rollback: it counts against the monthly rollback limit",
    }),
  })
  .openapi('RuntimeMissionRollbackInput', { example: { checkpoint_id: CHECKPOINT, reason: 'Opened duplicate issues', revert_memories: true } });

export const MemoryRollback = z
  .object({
    rollback_id: z.string().openapi({ example: idPattern('rollback').example }),
    removed: z.number().int().openapi({ description: 'Memories the agent created after the checkpoint, removed' }),
    restored: z.number().int().openapi({ description: 'Memories the agent deleted after the checkpoint, restored' }),
    reverted: z.number().int().openapi({ description: 'Memories the agent changed after the checkpoint, put back' }),
  })
  .openapi('RuntimeMemoryRollback');

export const PreviewQuery = z.object({
  checkpoint_id: PrefixedId('checkpoint', 'A checkpoint of this mission (404 otherwise); its latest checkpoint when omitted (409 without one)').optional(),
});

export const RollbackPreview = z
  .object({
    mission_id: z.string().openapi({ example: MISSION }),
    checkpoint_id: z.string().openapi({ example: CHECKPOINT }),
    target_timestamp: z.string().openapi({ description: "The checkpoint's time: the agent's memory writes after it would be undone", example: TIME }),
    state: z.record(z.string(), z.unknown()).openapi({ description: 'The state the mission would get', example: { step: 3 } }),
    checkpoints_discarded: z.number().int().openapi({ description: 'Later checkpoints that would be deleted', example: 1 }),
    memories: z
      .object({
        removed: z.number().int().openapi({ example: 1 }),
        restored: z.number().int().openapi({ example: 0 }),
        reverted: z.number().int().openapi({ example: 1 }),
      })
      .openapi({ description: 'What `revert_memories: true` would do' }),
    memories_reverted: z.number().int().openapi({ example: 2 }),
    warnings: z.array(z.string()).openapi({ example: [] }),
  })
  .openapi('RuntimeMissionRollbackPreview');

export const RolledBack = z
  .object({
    mission: Mission,
    checkpoint_id: z.string().openapi({ example: CHECKPOINT }),
    reason: z.string().nullable().openapi({ example: 'Opened duplicate issues' }),
    checkpoints_discarded: z.number().int().openapi({ description: 'Later checkpoints deleted', example: 1 }),
    memories_reverted: z.number().int().openapi({ description: 'Memory writes undone (removed + restored + reverted); 0 without revert_memories', example: 2 }),
    memory_rollback: MemoryRollback.nullable().openapi({ description: 'The memory rollback (in /v1/rollback/history) when revert_memories was set' }),
  })
  .openapi('RuntimeMissionRolledBack');

// ---- interventions

export const InterventionBody = z
  .object({
    intervention_type: z.enum(INTERVENTION_TYPES).openapi({
      description:
        '`pause` pauses the mission (409 unless running); `rollback_request` rolls it back to its latest checkpoint (409 without one); `escalate` and `reroute` emit events; `annotate` only records; `approve`/`reject` decide the pending action `action_id`',
    }),
    mission_id: PrefixedId('mission', 'The mission it concerns (404 when unknown); required for pause and rollback_request').optional(),
    action_id: z
      .string()
      .trim()
      .min(1)
      .max(128)
      .optional()
      .openapi({ description: 'The pending action; required for approve and reject', example: 'act_4f9Qw2b8Zr1LmT0aXcVe3K' }),
    agent_id: AgentId("A registered agent (404 when unknown); defaults to the mission's").optional(),
    rationale: Text(4_000, 'Why', 'Looping on the same failing test').optional(),
    confirmation: z
      .string()
      .max(32)
      .optional()
      .openapi({ description: 'For `approve` in solo mode: `ROLLBACK` approves a destructive action (as on the decision endpoint)', example: 'ROLLBACK' }),
  })
  .superRefine((b, ctx) => {
    if ((b.intervention_type === 'pause' || b.intervention_type === 'rollback_request') && !b.mission_id)
      ctx.addIssue({ code: 'custom', path: ['mission_id'], message: `is required for ${b.intervention_type}` });
    if ((b.intervention_type === 'approve' || b.intervention_type === 'reject') && !b.action_id)
      ctx.addIssue({ code: 'custom', path: ['action_id'], message: `is required for ${b.intervention_type}` });
  })
  .openapi('RuntimeInterventionInput', { example: { intervention_type: 'pause', mission_id: MISSION, rationale: 'Looping on the same failing test' } });

export const Intervention = z
  .object({
    intervention_id: z.string().openapi({ example: idPattern('intervention').example }),
    intervention_type: z.enum(INTERVENTION_TYPES),
    mission_id: z.string().nullable().openapi({ example: MISSION }),
    action_id: z.string().nullable().openapi({ example: null }),
    agent_id: z.string().nullable().openapi({ example: AGENT }),
    rationale: z.string().nullable().openapi({ example: 'Looping on the same failing test' }),
    effect: z
      .object({ type: z.string().openapi({ example: 'paused' }) })
      .catchall(z.unknown())
      .nullable()
      .openapi({
        description:
          'What it did: `{type: "paused", mission_status}`, `{type: "rolled_back", checkpoint_id, checkpoints_discarded}`, `{type: "escalated"|"rerouted", event}`, `{type: "decided", action_id, decision, status}`; null when it only recorded (annotate)',
        example: { type: 'paused', mission_status: 'paused' },
      }),
    created_at: z.string().openapi({ example: TIME }),
  })
  .openapi('RuntimeIntervention');

export const InterventionListQuery = PageQuery({ max: 1000, default: 100 }).extend({
  mission_id: PrefixedId('mission', 'Only interventions on this mission').optional(),
  agent_id: AgentId('Only interventions on this agent').optional(),
  intervention_type: z.enum(INTERVENTION_TYPES).optional().openapi({ description: 'Only this type' }),
});
export const InterventionPaging = paging({ totals: ['total'], hasMore: true });
export const InterventionList = z.object({ interventions: z.array(Intervention), ...InterventionPaging.fields }).openapi('RuntimeInterventionList');

export const toInterventionDto = (r: typeof runtimeInterventions.$inferSelect) => ({
  intervention_id: r.id,
  intervention_type: r.interventionType,
  mission_id: r.missionId,
  action_id: r.actionId,
  agent_id: r.agentId,
  rationale: r.rationale,
  effect: r.effect,
  created_at: r.createdAt.toISOString(),
});
