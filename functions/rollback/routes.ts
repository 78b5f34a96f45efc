import { json, keyRoute } from '../../shared/platform/http/openapi';
import { routeOf } from '../../shared/platform/http/verb';
import * as s from './schemas';
import { historyVerb, previewVerb, rollbackVerb } from './verbs';

const tags = ['Rollback'];

export const rollbackRoute = keyRoute({
  ...routeOf(rollbackVerb),
  path: '/v1/rollback',
  tags,
  summary: 'Roll the memory store back to a point in time',
  description:
    'Removes memories created after the target, restores memories deleted after it and reverts changed ones to their state at it, in one transaction. Each rollback counts against the monthly limit (free 10, starter 50, pro+ unlimited). It does not undo external side effects, agent state or policies. A rollback can itself be undone by rolling back to a time before it.',
  responses: { 200: json(s.RollbackResponse, 'Rolled back') },
});

export const previewRoute = keyRoute({
  ...routeOf(previewVerb),
  path: '/v1/rollback/preview',
  tags,
  summary: 'What a rollback would change (no side effects)',
  description:
    'The plan a rollback to `target` would carry out (memories removed, restored and reverted, bytes involved) and its warnings: audit retention, memories that cannot be restored, ACTION trace steps whose external effects a rollback does not undo.',
  responses: { 200: json(s.PreviewResponse, 'The plan and its warnings') },
});

export const historyRoute = keyRoute({
  ...routeOf(historyVerb),
  path: '/v1/rollback/history',
  tags,
  summary: 'Past rollbacks, newest first',
  description:
    'Every rollback of the account with its target time, when and by whom it ran, and how many memories it removed, restored and reverted; one page at a time.',
  responses: { 200: json(s.HistoryResponse, 'Rollbacks with target, counts and who ran them') },
});
