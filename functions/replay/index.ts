import { createRouter } from '../../shared/app';
import { authOf } from '../../shared/auth';
import { lifecycle } from './lifecycle';
import * as routes from './routes';
import * as service from './service';

export const replayRouter = createRouter()
  .openapi(routes.timelineRoute, async (c) => c.json(await service.timeline(c.get('services'), authOf(c), c.req.valid('query')), 200))
  .openapi(routes.snapshotRoute, async (c) => c.json(await service.snapshot(c.get('services'), authOf(c), c.req.valid('query')), 200))
  .openapi(routes.diffRoute, async (c) => c.json(await service.diff(c.get('services'), authOf(c), c.req.valid('query')), 200))
  .openapi(routes.memoryRoute, async (c) => c.json(await lifecycle(c.get('services'), authOf(c), c.req.valid('param').memory_id), 200))
  .openapi(routes.recallRoute, async (c) => c.json(await service.recall(c.get('services'), authOf(c), c.req.valid('query')), 200));
