import { createRouter } from '../../shared/platform/http/app';
import { ctxOf } from '../../shared/platform/contract/context';
import { defineFamily } from '../../shared/platform/http/family';
import * as routes from './routes';
import * as service from './service';

const router = createRouter()
  .openapi(routes.previewRoute, async (c) => c.json(await service.preview(ctxOf(c), c.req.valid('json')), 201))
  .openapi(routes.listRoute, async (c) => c.json(await service.list(ctxOf(c), c.req.valid('query')), 200))
  .openapi(routes.getRoute, async (c) => c.json(await service.get(ctxOf(c), c.req.valid('param')), 200))
  .openapi(routes.acknowledgeRoute, async (c) => c.json(await service.acknowledge(ctxOf(c), { ...c.req.valid('param'), ...c.req.valid('json') }), 200));

export default defineFamily({
  name: 'compensations',
  tag: { name: 'Compensations', description: 'Reviewable reversal plans for side-effecting trace steps (ACTION) that a rollback does not undo' },
  router,
});
