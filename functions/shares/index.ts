import type { Context } from 'hono';
import { createRouter, publicBase } from '../../shared/platform/http/app';
import { type AppEnv, ctxOf, publicCtxOf } from '../../shared/platform/contract/context';
import { defineFamily } from '../../shared/platform/http/family';
import * as routes from './routes';
import * as service from './service';

/** Where the share link points when no base is configured: never the request's Host (publicBase). */
const originOf = (c: Context<AppEnv>) => publicBase(c) ?? '';

const router = createRouter()
  .openapi(routes.shareRoute, async (c) => c.json(await service.createShare(ctxOf(c), { ...c.req.valid('json'), origin: originOf(c) }), 201))
  .openapi(routes.listRoute, async (c) => c.json(await service.listShares(ctxOf(c)), 200))
  .openapi(routes.checkTokenRoute, async (c) => c.json(await service.checkToken(publicCtxOf(c), c.req.valid('param')), 200))
  .openapi(routes.joinRoute, async (c) => c.json(await service.join(ctxOf(c), c.req.valid('json')), 200))
  .openapi(routes.rotateRoute, async (c) => c.json(await service.rotate(ctxOf(c), { ref: c.req.valid('param').token, origin: originOf(c) }), 200))
  .openapi(routes.revokeRoute, async (c) => {
    await service.revoke(ctxOf(c), { ref: c.req.valid('param').token });
    return c.body(null, 204);
  });

export default defineFamily({
  name: 'shares',
  tag: { name: 'Sharing', description: 'Token invitations to share a tag or a space with another tenant' },
  router,
});
