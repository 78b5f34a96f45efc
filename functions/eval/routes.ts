import { errors, json, jsonBody, keyRoute } from '../../shared/platform/http/openapi';
import * as s from './schemas';
import { routeOf } from '../../shared/platform/http/verb';
import { createBaselineVerb } from './verbs';

const tags = ['Eval'];
const experimental = true;

export const runRoute = keyRoute({
  operationId: 'eval.run',
  method: 'post',
  path: '/v1/eval/run',
  tags,
  experimental,
  summary: 'Measure the health of the memory store',
  description:
    'Computes the health score (0 to 100) and its breakdown over the live memories (not expired, not superseded), stores the result in the history and returns it. Daily run limit: free 3, starter 30, pro+ unlimited (429 RATE_LIMITED with `usage`). `drift_detail` is filled on Pro+.',
  request: { body: { required: false, content: { 'application/json': { schema: s.RunBody } } } },
  responses: { 200: json(s.EvalResult, 'The eval, stored in the history') },
});

export const gateRoute = keyRoute({
  operationId: 'eval.gate',
  method: 'post',
  path: '/v1/eval/gate',
  tags,
  experimental,
  feature: 'eval_gate',
  summary: 'Pass or fail a deploy on memory health',
  description:
    'Runs an eval and compares its health score with `min_score`: 200 when it passes, 422 GATE_FAILED with the whole eval under `eval` when it does not, so a CI step can stop a deploy.',
  request: { body: jsonBody(s.GateBody) },
  responses: {
    200: json(s.EvalResult, 'Passed (`passed: true`)'),
    422: json(s.GateFailure, 'GATE_FAILED: the health score is below min_score; the eval is in `eval`'),
  },
});

export const historyRoute = keyRoute({
  operationId: 'eval.history',
  method: 'get',
  path: '/v1/eval/history',
  tags,
  experimental,
  summary: 'Past evals, newest first',
  description: 'Kept 7 days on free, 30 on starter, 90 on pro and 365 on enterprise; older ones are pruned by maintenance.',
  request: { query: s.HistoryQuery },
  responses: { 200: json(s.HistoryResponse, 'One page of evals') },
});

export const driftRoute = keyRoute({
  operationId: 'eval.drift',
  method: 'get',
  path: '/v1/eval/drift',
  tags,
  experimental,
  feature: 'eval_drift',
  summary: 'How what the store holds has shifted',
  description:
    'Compares the memories created in the last `days` with those of the `days` before: `drift_score` and the change in count; on Pro+ also importance, topics and tag shifts (null below Pro).',
  request: { query: s.DriftQuery },
  responses: { 200: json(s.Drift, 'The drift report') },
});

export const createBaselineRoute = keyRoute({
  ...routeOf(createBaselineVerb),
  path: '/v1/eval/baselines',
  tags,
  experimental,
  summary: 'Add a recall baseline',
  description:
    'A query and the observation searching it should find; baselines drive `recall_consistency`. Free 1, starter 5, pro+ unlimited (429 RATE_LIMITED beyond).',
  responses: { 201: json(s.Baseline, 'Created') },
});

export const listBaselinesRoute = keyRoute({
  operationId: 'eval.listBaselines',
  method: 'get',
  path: '/v1/eval/baselines',
  tags,
  experimental,
  summary: 'The recall baselines, oldest first',
  responses: { 200: json(s.BaselineList, 'Every baseline of the account') },
});

export const deleteBaselineRoute = keyRoute({
  operationId: 'eval.deleteBaseline',
  method: 'delete',
  path: '/v1/eval/baselines/{baseline_id}',
  tags,
  experimental,
  summary: 'Remove a recall baseline',
  request: { params: s.BaselineParams },
  responses: { 204: { description: 'Deleted' }, ...errors(404) },
});
