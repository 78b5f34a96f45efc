import { defineVerb } from '../../shared/platform/http/verb';
import { explain } from './insights';
import * as s from './schemas';
import { approvalQueue } from './queue';
import { decide, listActions } from './service';

/** The actions verbs the routes and the console share (docs/architecture.md#verbs). */
export const approvalsVerb = defineVerb({
  name: 'actions.approvals',
  method: 'get',
  scopeFamily: 'approvals',
  input: { query: s.QueueQuery },
  run: (ctx, query) => approvalQueue(ctx, query),
});

/** The tenant's actions, newest first (GET /v1/actions; the console's actions page). */
export const listActionsVerb = defineVerb({
  name: 'actions.list',
  method: 'get',
  confinable: true,
  input: { query: s.ListQuery },
  run: (ctx, page) => listActions(ctx, page),
});

export const explainVerb = defineVerb({
  name: 'actions.explain',
  method: 'get',
  input: { params: s.ActionParams },
  run: (ctx, { action_id }) => explain(ctx, { actionId: action_id }),
});

/**
 * A decision with its fields in the body, as the console's form sends them; the route also takes
 * them as query parameters. The decision's rules stay in `decide`.
 */
export const decideVerb = defineVerb({
  name: 'actions.decide',
  method: 'post',
  scopeFamily: 'approvals',
  input: { params: s.ApprovalParams, body: s.DecisionBody },
  run: (ctx, { approval_id, ...body }) => decide(ctx, { approvalId: approval_id, body }),
});
