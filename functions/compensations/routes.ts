import { errors, json, jsonBody, keyRoute } from '../../shared/platform/http/openapi';
import { MAX_PLAN_ACTIONS } from '../../shared/memory/compensations';
import * as s from './schemas';

const tags = ['Compensations'];
const ids = "A malformed plan id is 400; an unknown one, or another tenant's, is 404.";

export const previewRoute = keyRoute({
  operationId: 'compensations.preview',
  feature: 'compensations',
  method: 'post',
  path: '/v1/compensations/preview',
  tags,
  summary: 'Plan the reversal of side effects a rollback does not undo',
  description: `A rollback puts memories back; what agents did to the outside world stays done. This creates (and stores) a plan with one action per ACTION trace step of your traces created after \`rollback_to\` and up to \`rollback_from\`, oldest first, each with a \`suggested\` reversal (the step metadata \`compensation\` or \`undo\` string when the agent left one). A window without ACTION steps gives a plan with no actions, already \`completed\`. A plan holds at most ${MAX_PLAN_ACTIONS} actions (the oldest) and says \`truncated: true\` when the window held more. Times are ISO 8601 (without an offset, UTC) or \`N minutes|hours|days ago\`, neither in the future (400); \`rollback_to\` after \`rollback_from\` is 422 INVALID_RANGE. POST /v1/rollback makes such a plan itself (its \`compensation_plan_id\`) when its window holds ACTION steps.`,
  request: { body: jsonBody(s.PreviewBody) },
  responses: { 201: json(s.PlanSchema, 'The plan, with its actions'), ...errors(422) },
});

export const listRoute = keyRoute({
  operationId: 'compensations.list',
  feature: 'compensations',
  method: 'get',
  path: '/v1/compensations',
  tags,
  summary: 'Compensation plans, newest first',
  description: `Plans without their actions, with \`counts\` per action status; \`status\` keeps one plan status.`,
  request: { query: s.ListQuery },
  responses: { 200: json(s.ListResponse, 'A page of plans') },
});

export const getRoute = keyRoute({
  operationId: 'compensations.get',
  feature: 'compensations',
  method: 'get',
  path: '/v1/compensations/{id}',
  tags,
  summary: 'A compensation plan with its actions',
  description: `${ids}`,
  request: { params: s.PlanParams },
  responses: { 200: json(s.PlanSchema, 'The plan'), ...errors(404) },
});

export const acknowledgeRoute = keyRoute({
  operationId: 'compensations.acknowledge',
  feature: 'compensations',
  method: 'patch',
  path: '/v1/compensations/{id}/actions/{index}',
  tags,
  summary: 'Acknowledge one action: completed, failed or skipped',
  description: `Records what became of the reversal, who acknowledged it and when, in your audit trail (\`compensation.acknowledged\`). \`completed\` and \`skipped\` are final: acknowledging such an action again is 409 CONFLICT. A \`failed\` action may be acknowledged again (a retry). The first acknowledgment moves the plan from \`pending\` to \`in_progress\`; when no action is pending any more it is \`completed\` (failed actions count as acknowledged; \`counts.failed\` shows them). An index outside the plan is 404. ${ids}`,
  request: { params: s.ActionParams, body: jsonBody(s.AckBody) },
  responses: { 200: json(s.AckResponse, 'The action and where the plan stands'), ...errors(404, 409) },
});
