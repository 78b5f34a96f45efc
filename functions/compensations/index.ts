import type { Context } from 'hono';
import { createRouter } from '../../shared/app';
import { authOf } from '../../shared/auth';
import type { Actor, AppEnv } from '../../shared/context';
import * as routes from './routes';
import * as service from './service';

const actorOf = (c: Context<AppEnv>): Actor => ({ tenantId: authOf(c).tenantId, keyId: authOf(c).keyId, requestId: c.get('requestId') });

export const compensationsRouter = createRouter()
  .openapi(routes.previewRoute, async (c) => c.json(await service.preview(c.get('services'), authOf(c), actorOf(c), c.req.valid('json')), 201))
  .openapi(routes.listRoute, async (c) => c.json(await service.list(c.get('services'), authOf(c), c.req.valid('query')), 200))
  .openapi(routes.getRoute, async (c) => c.json(await service.get(c.get('services'), authOf(c), c.req.valid('param').id), 200))
  .openapi(routes.acknowledgeRoute, async (c) => {
    const { id, index } = c.req.valid('param');
    return c.json(await service.acknowledge(c.get('services'), authOf(c), actorOf(c), id, index, c.req.valid('json')), 200);
  });
