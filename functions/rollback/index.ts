import { createRouter } from '../../shared/platform/http/app';
import { defineFamily } from '../../shared/platform/http/family';
import { runFromRoute } from '../../shared/platform/http/verb';
import * as routes from './routes';
import { historyVerb, previewVerb, rollbackVerb } from './verbs';

const router = createRouter()
  .openapi(routes.rollbackRoute, async (c) => c.json(await runFromRoute(rollbackVerb, c), 200))
  .openapi(routes.previewRoute, async (c) => c.json(await runFromRoute(previewVerb, c), 200))
  .openapi(routes.historyRoute, async (c) => c.json(await runFromRoute(historyVerb, c), 200));

export default defineFamily({
  name: 'rollback',
  tag: { name: 'Rollback', description: 'Point-in-time rollback of the memory store, preview and history' },
  router,
});
