import type { Context } from 'hono';
import { createRouter } from '../../shared/app';
import { authOf } from '../../shared/auth';
import type { Actor, AppEnv } from '../../shared/context';
import * as routes from './routes';
import * as service from './service';

const actorOf = (c: Context<AppEnv>): Actor => ({ tenantId: authOf(c).tenantId, keyId: authOf(c).keyId, requestId: c.get('requestId') });

export const spacesRouter = createRouter()
  .openapi(routes.createRoute, async (c) =>
    c.json(await service.createSpace(c.get('services'), authOf(c), actorOf(c), c.req.valid('json')), 201),
  )
  .openapi(routes.listRoute, async (c) => c.json(await service.listSpaces(c.get('services'), authOf(c), c.req.valid('query')), 200))
  .openapi(routes.getRoute, async (c) =>
    c.json(await service.getSpace(c.get('services'), authOf(c), actorOf(c), c.req.valid('param').space_id), 200),
  )
  .openapi(routes.updateRoute, async (c) => {
    const { space_id } = c.req.valid('param');
    return c.json(await service.updateSpace(c.get('services'), authOf(c), actorOf(c), space_id, c.req.valid('json')), 200);
  })
  .openapi(routes.deleteRoute, async (c) => {
    await service.deleteSpace(c.get('services'), authOf(c), actorOf(c), c.req.valid('param').space_id);
    return c.body(null, 204);
  })
  .openapi(routes.memoriesRoute, async (c) => {
    const { space_id } = c.req.valid('param');
    return c.json(await service.spaceMemories(c.get('services'), authOf(c), actorOf(c), space_id, c.req.valid('query')), 200);
  });
