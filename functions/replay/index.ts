import { createRouter } from '../../shared/platform/app';
import { ctxOf } from '../../shared/platform/context';
import { defineFamily } from '../../shared/platform/family';
import { lifecycle } from './lifecycle';
import * as routes from './routes';
import * as service from './service';

const router = createRouter()
  .openapi(routes.timelineRoute, async (c) => c.json(await service.timeline(ctxOf(c), c.req.valid('query')), 200))
  .openapi(routes.snapshotRoute, async (c) => c.json(await service.snapshot(ctxOf(c), c.req.valid('query')), 200))
  .openapi(routes.diffRoute, async (c) => c.json(await service.diff(ctxOf(c), c.req.valid('query')), 200))
  .openapi(routes.memoryRoute, async (c) => c.json(await lifecycle(ctxOf(c), { memoryId: c.req.valid('param').memory_id }), 200))
  .openapi(routes.recallRoute, async (c) => c.json(await service.recall(ctxOf(c), c.req.valid('query')), 200));

export default defineFamily({
  name: 'replay',
  tag: { name: 'Replay', description: 'The memory store over time: timeline, snapshot at a moment, diff, per-memory lifecycle, counterfactual recall' },
  router,
});
