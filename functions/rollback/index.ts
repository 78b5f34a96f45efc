import { createRouter } from '../../shared/platform/app';
import { ctxOf } from '../../shared/platform/context';
import { defineFamily } from '../../shared/platform/family';
import * as routes from './routes';
import * as service from './service';

const router = createRouter()
  .openapi(routes.rollbackRoute, async (c) => c.json(await service.rollback(ctxOf(c), c.req.valid('json')), 200))
  .openapi(routes.previewRoute, async (c) => c.json(await service.preview(ctxOf(c), c.req.valid('query')), 200))
  .openapi(routes.historyRoute, async (c) => c.json(await service.history(ctxOf(c), c.req.valid('query')), 200));

export default defineFamily({
  name: 'rollback',
  tag: { name: 'Rollback', description: 'Point-in-time rollback of the memory store, preview and history' },
  router,
});
