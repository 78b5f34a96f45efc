import { createRouter } from '../../shared/app';
import { authOf } from '../../shared/auth';
import { errors, json, jsonBody, keyRoute } from '../../shared/openapi';
import * as s from './schemas';
import * as service from './service';

const tags = ['Rollback'];

const rollbackRoute = keyRoute({
  method: 'post',
  path: '/v1/rollback',
  tags,
  summary: 'Roll the memory store back to a point in time',
  description:
    'Removes memories created after the target, restores memories deleted after it and reverts changed ones to their state at it, in one transaction. Each rollback counts against the monthly limit (free 10, starter 50, pro+ unlimited). It does not undo external side effects, agent state or policies. A rollback can itself be undone by rolling back to a time before it.',
  request: { body: jsonBody(s.RollbackBody) },
  responses: { 200: json(s.RollbackResponse, 'Rolled back'), ...errors(400) },
});

const previewRoute = keyRoute({
  method: 'get',
  path: '/v1/rollback/preview',
  tags,
  summary: 'What a rollback would change (no side effects)',
  request: { query: s.PreviewQuery },
  responses: { 200: json(s.PreviewResponse, 'The plan and its warnings'), ...errors(400) },
});

const historyRoute = keyRoute({
  method: 'get',
  path: '/v1/rollback/history',
  tags,
  summary: 'Past rollbacks, newest first',
  request: { query: s.HistoryQuery },
  responses: { 200: json(s.HistoryResponse, 'Rollbacks with target, counts and who ran them'), ...errors(400) },
});

export const rollbackRouter = createRouter()
  .openapi(rollbackRoute, async (c) => {
    const auth = authOf(c);
    const actor = { tenantId: auth.tenantId, keyId: auth.keyId, requestId: c.get('requestId') };
    return c.json(await service.rollback(c.get('services'), auth, actor, c.req.valid('json').target), 200);
  })
  .openapi(previewRoute, async (c) => c.json(await service.preview(c.get('services'), authOf(c), c.req.valid('query').target), 200))
  .openapi(historyRoute, async (c) => {
    const { limit, offset } = c.req.valid('query');
    return c.json(await service.history(c.get('services'), authOf(c), limit, offset), 200);
  });
