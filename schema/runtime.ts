import { bigint, index, jsonb, pgTable, primaryKey, text, timestamp, unique } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const AGENT_STATUSES = ['active', 'paused', 'archived'] as const;
export const AGENT_PROVIDERS = ['openai', 'anthropic', 'litellm'] as const;
export const MISSION_STATUSES = ['queued', 'running', 'paused', 'completed', 'failed', 'cancelled'] as const;
/** A mission in one of these may still change: deleting or archiving its agent cancels it. */
export const ACTIVE_MISSION_STATUSES = ['queued', 'running', 'paused'] as const;
export const RISK_LEVELS = ['low', 'medium', 'high', 'critical'] as const;
export const INTERVENTION_TYPES = ['approve', 'reject', 'pause', 'escalate', 'reroute', 'annotate', 'rollback_request'] as const;

export type AgentStatus = (typeof AGENT_STATUSES)[number];
export type MissionStatus = (typeof MISSION_STATUSES)[number];
export type RiskLevel = (typeof RISK_LEVELS)[number];
export type InterventionType = (typeof INTERVENTION_TYPES)[number];

export interface Tool {
  name: string;
  description: string;
}

/** What an intervention did; null when it only recorded (migrations/0019). */
export type InterventionEffect = { type: string } & Record<string, unknown>;

export const runtimeCapabilities = pgTable(
  'runtime_capabilities',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    name: text('name').notNull(),
    description: text('description'),
    tools: jsonb('tools').$type<Tool[]>().notNull(),
    riskLevels: jsonb('risk_levels').$type<Record<string, RiskLevel>>().notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [unique().on(t.tenantId, t.name)],
);

export const runtimeAgents = pgTable(
  'runtime_agents',
  {
    tenantId: text('tenant_id').notNull(),
    agentId: text('agent_id').notNull(),
    name: text('name').notNull(),
    description: text('description'),
    provider: text('provider', { enum: AGENT_PROVIDERS }).notNull(),
    model: text('model').notNull(),
    instructions: text('instructions'),
    capabilities: text('capabilities').array().notNull(),
    status: text('status', { enum: AGENT_STATUSES }).notNull(),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.agentId] }), index('runtime_agents_list_idx').on(t.tenantId, t.createdAt.desc(), t.agentId.desc())],
);

export const runtimeMissions = pgTable(
  'runtime_missions',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    agentId: text('agent_id').notNull(),
    goal: text('goal').notNull(),
    constraints: text('constraints').array().notNull(),
    successCriteria: text('success_criteria').array().notNull(),
    allowedCapabilities: text('allowed_capabilities').array().notNull(),
    status: text('status', { enum: MISSION_STATUSES }).notNull(),
    state: jsonb('state').$type<Record<string, unknown>>().notNull(),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
    startedAt: ts('started_at'),
    endedAt: ts('ended_at'),
  },
  (t) => [
    index('runtime_missions_list_idx').on(t.tenantId, t.createdAt.desc(), t.id.desc()),
    index('runtime_missions_agent_idx').on(t.tenantId, t.agentId, t.createdAt.desc(), t.id.desc()),
  ],
);

export const runtimeCheckpoints = pgTable(
  'runtime_checkpoints',
  {
    id: text('id').primaryKey(),
    seq: bigint('seq', { mode: 'number' }).generatedAlwaysAsIdentity(),
    tenantId: text('tenant_id').notNull(),
    missionId: text('mission_id').notNull(),
    label: text('label').notNull(),
    state: jsonb('state').$type<Record<string, unknown>>().notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('runtime_checkpoints_mission_idx').on(t.tenantId, t.missionId, t.seq)],
);

export const runtimeInterventions = pgTable(
  'runtime_interventions',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    interventionType: text('intervention_type', { enum: INTERVENTION_TYPES }).notNull(),
    missionId: text('mission_id'),
    actionId: text('action_id'),
    agentId: text('agent_id'),
    rationale: text('rationale'),
    effect: jsonb('effect').$type<InterventionEffect | null>(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('runtime_interventions_list_idx').on(t.tenantId, t.createdAt.desc(), t.id.desc())],
);
