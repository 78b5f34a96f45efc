import type { Context } from 'hono';
import { createRouter } from '../../shared/app';
import { authOf } from '../../shared/auth';
import type { Actor, AppEnv } from '../../shared/context';
import * as routes from './routes';
import * as service from './service';

const actorOf = (c: Context<AppEnv>): Actor => ({ tenantId: authOf(c).tenantId, keyId: authOf(c).keyId, requestId: c.get('requestId') });
const originOf = (c: Context<AppEnv>) => new URL(c.req.url).origin;

export const sharesRouter = createRouter()
  .openapi(routes.shareRoute, async (c) => {
    const body = c.req.valid('json');
    return c.json(await service.createShare(c.get('services'), authOf(c), actorOf(c), { ...body, origin: originOf(c) }), 201);
  })
  .openapi(routes.listRoute, async (c) => c.json(await service.listShares(c.get('services'), authOf(c)), 200))
  .openapi(routes.checkTokenRoute, async (c) => c.json(await service.checkToken(c.get('services'), c.req.valid('param').token), 200))
  .openapi(routes.joinRoute, async (c) =>
    c.json(await service.join(c.get('services'), authOf(c), actorOf(c), c.req.valid('json').token), 200),
  )
  .openapi(routes.rotateRoute, async (c) => {
    const ref = c.req.valid('param').token;
    return c.json(await service.rotate(c.get('services'), authOf(c), actorOf(c), { ref, origin: originOf(c) }), 200);
  })
  .openapi(routes.revokeRoute, async (c) => {
    await service.revoke(c.get('services'), authOf(c), actorOf(c), c.req.valid('param').token);
    return c.body(null, 204);
  });
