import { ErrorSchema, errors, json, jsonBody, keyRoute } from '../../shared/platform/http/openapi';
import { routeOf } from '../../shared/platform/http/verb';
import { z } from '@hono/zod-openapi';
import { TIME_BUDGET_MS, WORK_BUDGET_CHARS } from '../../shared/control/budget';
import { CONNECTORS } from '../../shared/control/types';
import * as s from './schemas';
import { approvalsVerb, explainVerb, listActionsVerb } from './verbs';

const tags = ['Actions'];

const statuses = `A rule that blocks wins over one that asks for approval, which wins over a warning. \`blocked\` is answered 403 with code \`BLOCKED\` and the whole action body; \`allowed\` and \`pending_review\` are answered 200. In \`shadow\` evaluation mode (PUT /v1/control/settings) the action is evaluated and recorded but always \`allowed\`; what enforcement would have answered is \`policy_result.shadow_status\`. Every submission is in the audit chain (resource id = action id); a pending one emits \`action.pending_review\`. An action that would be held for review while the approval mode is \`team\` or \`enterprise\` and the tier no longer has that mode is refused 403 svc_ram.v1.tier.feature_required (nothing is recorded). Evaluation is bounded per action: your rules may scan at most ${WORK_BUDGET_CHARS / 1024 / 1024} Mi characters of the action (each rule without a literal the prefilter finds scans the whole action once) and take at most ${TIME_BUDGET_MS} ms; the built-ins always run in full. When a budget runs out the action is held for review (\`pending_review\`, \`policy_result.reason\` starting with "Policy evaluation budget exceeded"), never allowed; a rule that already blocked still blocks.`;

export const submitRoute = keyRoute({
  operationId: 'actions.submit',
  confinable: true,
  method: 'post',
  path: '/v1/actions',
  tags,
  summary: 'Ask before acting: evaluate an action against your policies',
  description: statuses,
  request: { body: jsonBody(s.SubmitBody) },
  responses: {
    200: json(s.SubmitResponse, 'Allowed, or held for review (`policy_result.action_id` to poll)'),
    403: json(
      z.union([s.BlockedResponse, ErrorSchema]),
      'Blocked by a policy (BLOCKED): the error fields and the action body; or held for review under an approval mode the tier lacks (svc_ram.v1.tier.feature_required)',
    ),
  },
});

/** Routed with a pattern (connectors only, the operation may span segments): see index.ts. */
export const CONNECTOR_ROUTING_PATH = `/v1/actions/:connector{${CONNECTORS.join('|')}}/:operation{.+}`;

export const submitConnectorRoute = keyRoute({
  operationId: 'actions.submitConnector',
  confinable: true,
  method: 'post',
  path: '/v1/actions/{connector}/{operation}',
  tags,
  summary: 'Submit an action by connector path, with the params as the body',
  description: `The same as POST /v1/actions with \`action\` = \`{connector}.{operation}\` (slashes in the operation become dots) and the whole JSON body as \`params\`. The agent is named by the \`agent_id\` query parameter or the \`X-Agent-Id\` header (both: they must agree). Only the known connectors (${CONNECTORS.join(', ')}) have a path; other actions use POST /v1/actions. ${statuses}`,
  request: { params: s.ConnectorParams, query: s.ConnectorQuery, body: jsonBody(s.ConnectorBody) },
  responses: {
    200: json(s.SubmitResponse, 'Allowed, or held for review'),
    403: json(
      z.union([s.BlockedResponse, ErrorSchema]),
      'Blocked by a policy (BLOCKED); or held for review under an approval mode the tier lacks (svc_ram.v1.tier.feature_required)',
    ),
    404: { ...errors(404)[404], description: 'No such connector (NOT_FOUND): only the known connectors have a path' },
  },
});

export const listRoute = keyRoute({
  ...routeOf(listActionsVerb),
  path: '/v1/actions',
  tags,
  summary: 'Your submitted actions, newest first',
  description:
    "Each action as GET /v1/actions/{action_id} shows it, with `outcome`: what the evaluation answered at submission (its `status` may have moved on since). A key confined to an agent lists only that agent's actions.",
  responses: { 200: json(s.ActionList, 'A page of actions') },
});

export const getRoute = keyRoute({
  operationId: 'actions.get',
  confinable: true,
  method: 'get',
  path: '/v1/actions/{action_id}',
  tags,
  summary: "Poll an action's status",
  description:
    'What an agent polls after `pending_review`: `approved` (and later `executed`) mean go; `denied` means stop, with the `reason` (`expired` when nobody decided within ACTION_APPROVAL_TTL_HOURS). The approval id of a memory write a rule held (`urn:uuid:...`) answers here too, with `kind: memory`: `pending_review`, then `approved` with the stored `memory_id`, or `denied`.',
  request: { params: s.ActionParams },
  responses: { 200: json(s.ActionStatusSchema, 'The action and its status'), ...errors(404) },
});

export const resultRoute = keyRoute({
  operationId: 'actions.result',
  confinable: true,
  method: 'post',
  path: '/v1/actions/{action_id}/result',
  tags,
  summary: 'Report what happened when the agent acted',
  description:
    'Only an `allowed` or `approved` action may report `executed` or `failed`, once; anything else is 409 CONFLICT naming the `action_status`. Audited.',
  request: { params: s.ActionParams, body: jsonBody(s.ResultBody) },
  responses: { 200: json(s.ActionStatusSchema, 'The action with its final status'), ...errors(404, 409) },
});

export const queueRoute = keyRoute({
  ...routeOf(approvalsVerb),
  path: '/v1/approvals',
  tags,
  summary: 'The approval queue',
  description:
    'Every action that was ever pending review, with its latest status, ordered by the audit sequence number of its latest entry (the oldest change first), not by time. Filter with `status` (or its older name `status_filter`). `scope=team` lists instead what you review for others: the team- and enterprise-mode approvals of the tenants you share a team with, with their params. Each entry says how far its decision stands (`approvals` of `approvals_required`, the key that closed it), read for the whole page at once; `params` and `policy_result` of your own entries need a key that may read actions (`actions:read`). `approval_id` narrows the page to one approval.',
  responses: { 200: json(s.QueueResponse, 'Approvals and their total') },
});

export const decideRoute = keyRoute({
  operationId: 'actions.decide',
  scopeFamily: 'approvals',
  method: 'post',
  path: '/v1/approvals/{approval_id}/decision',
  tags,
  summary: 'Approve or deny a pending action',
  description: [
    'Needs the scope `approvals:write` (a restricted key with only `actions:write`, what an agent needs to submit actions, is 403 FORBIDDEN with `required_scope`). Whatever its scopes, the key that submitted an action never decides it (403 FORBIDDEN): an agent does not approve its own actions. The answer, the audit entry and GET /v1/actions/{action_id}/explain name the deciding key as `decided_by_key_id`, beside the free-form `approver_id`.',
    'Fields come in the JSON body or as query parameters (a field in the body wins). Decisions are final: a second one is 409 `svc_ram.v1.control.approval_already_decided`. An id that is unknown, never pending, or not yours to decide is 404 `svc_ram.v1.control.approval_not_found`; `decision` other than approve or deny is 400 `control.invalid_decision`.',
    '**solo** (all tiers, the default): the submitting tenant decides, not before 5 seconds after submission (409 CONFLICT with `retry_after`); approving a destructive action (its name or params mention delete, drop, destroy, truncate, rollback, transfer or payment) needs `confirmation: "ROLLBACK"` (else 400 VALIDATION_ERROR).',
    '**team** (Starter+): a member of a team the submitter belongs to, other than `readonly` (403 FORBIDDEN), decides at once with their own key; the submitter may approve its own action only 10 minutes after submission (409 CONFLICT with `retry_after`) and may deny it at any time.',
    '**enterprise** (Enterprise): the submitter and its team members (not `readonly`; only `allowed_roles` when set) each record an approval; the action is `approved` once `min_approvals` distinct tenants approved (and, with `require_manager`, one of them is a team owner or admin); one deny decides `denied`. Approving twice is 409 CONFLICT.',
  ].join('\n\n'),
  request: {
    params: s.ApprovalParams,
    query: s.DecisionQuery,
    body: { required: false, content: { 'application/json': { schema: s.DecisionBody } } },
  },
  responses: { 200: json(s.DecisionResponse, 'The decision and the resulting status'), ...errors(403, 404, 409) },
});

export const getSettingsRoute = keyRoute({
  operationId: 'actions.getSettings',
  scopeFamily: 'settings',
  method: 'get',
  path: '/v1/control/settings',
  tags,
  summary: 'Approval and evaluation settings',
  description:
    "The approval mode new actions are decided under (`effective_approval_mode` is `solo` when the tier no longer has the mode's feature), the evaluation mode, and the enterprise rules.",
  responses: { 200: json(s.SettingsSchema, 'The settings (defaults until set)') },
});

export const putSettingsRoute = keyRoute({
  operationId: 'actions.putSettings',
  scopeFamily: 'settings',
  method: 'put',
  path: '/v1/control/settings',
  tags,
  summary: 'Change approval and evaluation settings',
  description:
    'Needs the scope `settings:write` (shadow evaluation turns enforcement off for the whole account, so `actions:write` does not grant it). Fields left out keep their value. `approval_mode: team` needs the `team_approvals` feature (Starter+), `enterprise` the `enterprise_approvals` feature (Enterprise): a lower tier is answered 403 svc_ram.v1.tier.feature_required, as POST /v1/actions answers an action needing review after a downgrade below the mode (GET shows that refusal in `approval_mode_unavailable`). An action is decided under the settings in force when it was submitted. Audited.',
  request: { body: jsonBody(s.SettingsBody) },
  responses: { 200: json(s.SettingsSchema, 'The settings now'), ...errors(403) },
});

export const explainRoute = keyRoute({
  ...routeOf(explainVerb),
  path: '/v1/actions/{action_id}/explain',
  tags,
  summary: 'Why an action ended as it did',
  description: `The policy result, the approval with each decision (null when never pending), the tenant's memories as they were at submission (replay; newest first, at most ${s.MAX_EXPLAIN_MEMORIES}), the action's audit trail and a one-paragraph summary. 404 \`actions.not_found\` for an unknown id or another tenant's.`,
  responses: { 200: json(s.ExplainResponse, 'The explanation'), ...errors(404) },
});

export const dashboardRoute = keyRoute({
  operationId: 'actions.dashboard',
  feature: 'control_dashboard',
  method: 'get',
  path: '/v1/control/dashboard',
  tags,
  summary: 'Governed actions at a glance',
  description:
    'Over the last `window` (24h, 7d, 30d): totals by what evaluation decided, current statuses, violations by policy and by agent, and a time series by `bucket` (hour or day, UTC) with empty buckets as zeros.',
  request: { query: s.DashboardQuery },
  responses: { 200: json(s.DashboardResponse, 'Totals, violations and the series') },
});

export const violationsRoute = keyRoute({
  operationId: 'actions.agentViolations',
  method: 'get',
  path: '/v1/control/agents/{agent_id}/violations',
  tags,
  summary: "An agent's violation history",
  description:
    "The agent's actions with at least one violation between `since` (default 30 days ago) and `until` (default now), newest first, each with its violations. A bad `since` or `until` (or `since` after `until`) is 400 `svc_ram.v1.control.invalid_violations_param` naming the field in `field`.",
  request: { params: s.AgentParams, query: s.ViolationsQuery },
  responses: { 200: json(s.ViolationsResponse, 'The violations') },
});
