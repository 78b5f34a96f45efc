import { defineVerb } from '../../shared/platform/http/verb';
import * as s from './schemas';
import { history, preview, rollback } from './service';

/** The rollback verbs the routes and the console share (docs/architecture.md#verbs). */
export const rollbackVerb = defineVerb({
  name: 'rollback.run',
  method: 'post',
  input: { body: s.RollbackBody },
  run: (ctx, body) => rollback(ctx, body),
});

export const previewVerb = defineVerb({
  name: 'rollback.preview',
  method: 'get',
  input: { query: s.PreviewQuery },
  run: (ctx, query) => preview(ctx, query),
});

export const historyVerb = defineVerb({
  name: 'rollback.history',
  method: 'get',
  input: { query: s.HistoryQuery },
  run: (ctx, page) => history(ctx, page),
});
