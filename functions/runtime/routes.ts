import { errors as errorsOf, json, jsonBody, keyRoute } from '../../shared/platform/http/openapi';
import * as s from './schemas';
import { routeOf } from '../../shared/platform/http/verb';
import { createAgentVerb, createCapabilityVerb } from './verbs';
import { TRANSITIONS, type Verb } from './transitions';

const tags = ['Runtime'];

// ---- capability packs

export const createCapabilityRoute = keyRoute({
  ...routeOf(createCapabilityVerb),
  path: '/v1/capabilities',
  tags,
  summary: 'Register a capability pack',
  description:
    'A named set of tools an agent may use, with a risk level per tool. A tool is an action (`github.create_issue`) or a connector (`github`: every `github.*` action). A risk level for a tool the pack does not list, or a level other than low, medium, high, critical, is 400; a name in use is 409.',
  responses: { 201: json(s.Capability, 'The pack'), ...errorsOf(409) },
});

export const listCapabilitiesRoute = keyRoute({
  operationId: 'runtime.listCapabilities',
  method: 'get',
  path: '/v1/capabilities',
  tags,
  summary: 'Capability packs, by name',
  description: 'Every capability pack of the account with its tools and their risk levels, a page at a time (limit 1 to 1000, default 100).',
  request: { query: s.CapabilityListQuery },
  responses: { 200: json(s.CapabilityList, 'A page of packs') },
});

// ---- agents

export const createAgentRoute = keyRoute({
  ...routeOf(createAgentVerb),
  path: '/v1/agents',
  tags,
  summary: 'Register an agent',
  description:
    '`provider` and `model` are required. `agent_id` is yours (the id the agent writes memories, traces and actions under) or a generated `agt_...`; one in use is 409. Every capability pack named must exist (404). A new agent is `active`.',
  responses: { 201: json(s.Agent, 'The agent'), ...errorsOf(404, 409) },
});

export const listAgentsRoute = keyRoute({
  operationId: 'runtime.listAgents',
  method: 'get',
  path: '/v1/agents',
  tags,
  summary: 'Agents, newest first',
  description: 'Registered agents with their status, capabilities and active missions; `status` filters; limit 1 to 1000 (default 100).',
  request: { query: s.AgentListQuery },
  responses: { 200: json(s.AgentList, 'A page of agents with their active missions') },
});

export const getAgentRoute = keyRoute({
  operationId: 'runtime.getAgent',
  method: 'get',
  path: '/v1/agents/{agent_id}',
  tags,
  summary: 'An agent with its status, capabilities and active missions',
  description: "The full agent record; `active_missions` lists its queued, running and paused missions, newest first. Another account's agent is 404.",
  request: { params: s.AgentParams },
  responses: { 200: json(s.Agent, 'The agent'), ...errorsOf(404) },
});

export const updateAgentRoute = keyRoute({
  operationId: 'runtime.updateAgent',
  method: 'patch',
  path: '/v1/agents/{agent_id}',
  tags,
  summary: "Set an agent's status",
  description:
    '`active`, `paused` or `archived`. A paused agent keeps its missions, but none of them can be started or resumed (409) until it is active again; archiving cancels its active missions (each with `mission.cancelled`) and refuses new ones (409).',
  request: { params: s.AgentParams, body: jsonBody(s.AgentPatch) },
  responses: { 200: json(s.Agent, 'The agent'), ...errorsOf(404) },
});

export const deleteAgentRoute = keyRoute({
  operationId: 'runtime.deleteAgent',
  method: 'delete',
  path: '/v1/agents/{agent_id}',
  tags,
  summary: 'Delete an agent for good',
  description: 'Cancels its active missions in the same transaction (each with `mission.cancelled`); the missions and their checkpoints stay readable.',
  request: { params: s.AgentParams },
  responses: { 200: json(s.DeletedAgent, 'Deleted, with the missions it cancelled'), ...errorsOf(404) },
});

// ---- missions

export const createMissionRoute = keyRoute({
  operationId: 'runtime.createMission',
  method: 'post',
  path: '/v1/missions',
  tags,
  summary: 'Give an agent a mission',
  description:
    "The mission starts `queued`. An unknown agent is 404 (so is another account's); an archived one is 409 CONFLICT with `agent_status`. `allowed_capabilities` outside the agent's capabilities is 400.",
  request: { body: jsonBody(s.MissionBody) },
  responses: { 201: json(s.Mission, 'The mission'), ...errorsOf(404, 409) },
});

export const listMissionsRoute = keyRoute({
  operationId: 'runtime.listMissions',
  method: 'get',
  path: '/v1/missions',
  tags,
  summary: 'Missions, newest first',
  description: 'Missions of every agent (also of deleted ones), newest first; `agent_id` and `status` filter; limit 1 to 1000 (default 100).',
  request: { query: s.MissionListQuery },
  responses: { 200: json(s.MissionList, 'A page of missions') },
});

export const getMissionRoute = keyRoute({
  operationId: 'runtime.getMission',
  method: 'get',
  path: '/v1/missions/{mission_id}',
  tags,
  summary: 'A mission',
  description: 'The full mission record: status, the `state` of the checkpoint last rolled back to, and when it started and ended.',
  request: { params: s.MissionParams },
  responses: { 200: json(s.Mission, 'The mission'), ...errorsOf(404) },
});

const verbSummary: Record<Verb, string> = {
  start: 'Start a queued mission',
  pause: 'Pause a running mission',
  resume: 'Resume a paused mission where it left off',
  complete: 'Complete a mission',
  fail: 'Mark a mission failed',
  cancel: 'Cancel a mission for good',
};
const camel = (verb: Verb) => `${verb}Mission` as const;

const transitionRoute = <V extends Verb>(verb: V) =>
  keyRoute({
    operationId: `runtime.${camel(verb)}`,
    method: 'post',
    path: `/v1/missions/{mission_id}/${verb}`,
    tags,
    summary: verbSummary[verb],
    description: `${TRANSITIONS[verb].from.join(' or ')} → ${TRANSITIONS[verb].to}, with the \`${TRANSITIONS[verb].event}\` event. From any other status 409 CONFLICT, whose \`mission_status\` names the current one.${verb === 'start' || verb === 'resume' ? ' The agent must be active (409 with `agent_status` otherwise).' : ''} Returns the full record.`,
    request: { params: s.MissionParams },
    responses: { 200: json(s.Mission, 'The mission after the transition'), ...errorsOf(404, 409) },
  });

// One constant per verb, so each route is a named export like the others (the tests type their
// response bodies from these exports).
export const startMissionRoute = transitionRoute('start');
export const pauseMissionRoute = transitionRoute('pause');
export const resumeMissionRoute = transitionRoute('resume');
export const completeMissionRoute = transitionRoute('complete');
export const failMissionRoute = transitionRoute('fail');
export const cancelMissionRoute = transitionRoute('cancel');

/** The transition routes by verb, in the order the router mounts them. */
export const transitionRoutes = {
  start: startMissionRoute,
  pause: pauseMissionRoute,
  resume: resumeMissionRoute,
  complete: completeMissionRoute,
  fail: failMissionRoute,
  cancel: cancelMissionRoute,
} satisfies Record<Verb, unknown>;

// ---- checkpoints and rollback

export const createCheckpointRoute = keyRoute({
  operationId: 'runtime.createCheckpoint',
  method: 'post',
  path: '/v1/missions/{mission_id}/checkpoints',
  tags,
  summary: "Checkpoint a mission's progress",
  description:
    "`state` is the agent's progress (any JSON object up to 16 KB), restored by a rollback to this checkpoint. 409 once the mission is completed, failed or cancelled.",
  request: { params: s.MissionParams, body: jsonBody(s.CheckpointBody) },
  responses: { 201: json(s.Checkpoint, 'The checkpoint'), ...errorsOf(404, 409) },
});

export const listCheckpointsRoute = keyRoute({
  operationId: 'runtime.listCheckpoints',
  method: 'get',
  path: '/v1/missions/{mission_id}/checkpoints',
  tags,
  summary: "A mission's checkpoints in creation order",
  description: 'Oldest first; a rollback deletes the checkpoints after the one it went back to. Limit 1 to 1000 (default 100).',
  request: { params: s.MissionParams, query: s.CheckpointListQuery },
  responses: { 200: json(s.CheckpointList, 'A page of checkpoints, oldest first'), ...errorsOf(404) },
});

export const rollbackRoute = keyRoute({
  operationId: 'runtime.rollbackMission',
  method: 'post',
  path: '/v1/missions/{mission_id}/rollback',
  tags,
  summary: 'Roll a mission back to a checkpoint',
  description:
    "Sets the mission's `state` to the checkpoint's and deletes the checkpoints taken after it, in any status (the status stays); `reason` is kept in the audit trail and the `mission.rolled_back` event. A checkpoint of another mission is 404. With `revert_memories: true` the memory writes of the mission's agent (memories whose `agent_id` is the agent's) after the checkpoint are undone in the same transaction, as a rollback of those memories only: created ones removed, changed and deleted ones restored, with the rollback's audit entry, history row and `rollback.completed` event; it counts against the monthly rollback limit (429).",
  request: { params: s.MissionParams, body: jsonBody(s.RollbackBody) },
  responses: { 200: json(s.RolledBack, 'The mission after the rollback'), ...errorsOf(404) },
});

export const previewRollbackRoute = keyRoute({
  operationId: 'runtime.previewRollback',
  method: 'get',
  path: '/v1/missions/{mission_id}/rollback/preview',
  tags,
  summary: 'What a mission rollback would do (no side effects)',
  description:
    "To `checkpoint_id`, or to the latest checkpoint when it is omitted (what a `rollback_request` intervention does; 409 without one). The state the mission would get, the checkpoints that would be deleted, and the memory writes of its agent after the checkpoint that `revert_memories: true` would undo, with the rollback engine's warnings.",
  request: { params: s.MissionParams, query: s.PreviewQuery },
  responses: { 200: json(s.RollbackPreview, 'The plan'), ...errorsOf(404, 409) },
});

// ---- interventions

export const recordInterventionRoute = keyRoute({
  operationId: 'runtime.recordIntervention',
  method: 'post',
  path: '/v1/interventions',
  tags,
  summary: 'Step in: pause, roll back, escalate, reroute, annotate, approve or reject',
  description:
    "Recorded in the audit trail and announced as `intervention.recorded`, and acted on in the same transaction: `pause` pauses the mission (409 unless running), `rollback_request` rolls it back to its latest checkpoint (409 without one), `escalate` and `reroute` emit `intervention.escalated` / `intervention.rerouted`, `annotate` only records, `approve` and `reject` decide the pending action `action_id` through the approval rules. `effect` says what happened. A `mission_id` or `agent_id` that names nothing is 404; an `agent_id` other than the mission's is 400.",
  request: { body: jsonBody(s.InterventionBody) },
  responses: { 201: json(s.Intervention, 'The intervention and its effect'), ...errorsOf(404, 409) },
});

export const listInterventionsRoute = keyRoute({
  operationId: 'runtime.listInterventions',
  method: 'get',
  path: '/v1/interventions',
  tags,
  summary: 'Interventions, newest first',
  description: 'Every intervention with its effect; `mission_id`, `agent_id` and `intervention_type` filter; limit 1 to 1000 (default 100).',
  request: { query: s.InterventionListQuery },
  responses: { 200: json(s.InterventionList, 'A page of interventions') },
});
