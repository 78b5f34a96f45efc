import { createRouter } from '../../shared/platform/http/app';
import { ctxOf } from '../../shared/platform/contract/context';
import { defineFamily } from '../../shared/platform/http/family';
import { deleteAccount } from './account';
import * as routes from './routes';
import * as service from './service';

const router = createRouter()
  .openapi(routes.eraseRoute, async (c) => c.json(await service.erase(ctxOf(c), c.req.valid('json')), 201))
  .openapi(routes.listRoute, async (c) => c.json(await service.listErasures(ctxOf(c), c.req.valid('query')), 200))
  .openapi(routes.getRoute, async (c) => c.json(await service.getErasure(ctxOf(c), { erasureId: c.req.valid('param').erasure_id }), 200))
  .openapi(routes.accountRoute, async (c) => c.json(await deleteAccount(ctxOf(c), c.req.valid('json')), 200));

export default defineFamily({
  name: 'erasures',
  tag: { name: 'Erasures', description: 'Erasure of memories and accounts (GDPR Art. 17) with a signed receipt' },
  router,
});
