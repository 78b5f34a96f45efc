import { createRouter } from '../../shared/platform/http/app';
import { ctxOf } from '../../shared/platform/contract/context';
import { defineFamily } from '../../shared/platform/http/family';
import * as routes from './routes';
import * as service from './service';
import { runFromRoute } from '../../shared/platform/http/verb';
import { diffVerb, lifecycleVerb } from './verbs';

const router = createRouter()
  .openapi(routes.timelineRoute, async (c) => c.json(await service.timeline(ctxOf(c), c.req.valid('query')), 200))
  .openapi(routes.snapshotRoute, async (c) => c.json(await service.snapshot(ctxOf(c), c.req.valid('query')), 200))
  .openapi(routes.diffRoute, async (c) => c.json(await runFromRoute(diffVerb, c), 200))
  .openapi(routes.memoryRoute, async (c) => c.json(await runFromRoute(lifecycleVerb, c), 200))
  .openapi(routes.recallRoute, async (c) => c.json(await service.recall(ctxOf(c), c.req.valid('query')), 200));

export default defineFamily({
  name: 'replay',
  tag: { name: 'Replay', description: 'The memory store over time: timeline, snapshot at a moment, diff, per-memory lifecycle, counterfactual recall' },
  router,
});
