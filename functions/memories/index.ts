import { createRouter } from '../../shared/app';
import { authOf } from '../../shared/auth';
import type { AppEnv } from '../../shared/context';
import type { Context } from 'hono';
import { contentTypes, exportStream } from './export';
import * as routes from './routes';
import { search } from './search';
import * as service from './service';
import { storeMemory } from './store';

const actorOf = (c: Context<AppEnv>) => {
  const auth = authOf(c);
  return { auth, actor: { tenantId: auth.tenantId, keyId: auth.keyId, requestId: c.get('requestId') } };
};

export const memoriesRouter = createRouter()
  .openapi(routes.storeRoute, async (c) => {
    const { auth, actor } = actorOf(c);
    return c.json(await storeMemory(c.get('services'), auth, actor, c.req.valid('json')), 201);
  })
  .openapi(routes.listRoute, async (c) => c.json(await service.list(c.get('services'), authOf(c), c.req.valid('query')), 200))
  .openapi(routes.searchRoute, async (c) => {
    const { auth, actor } = actorOf(c);
    return c.json(await search(c.get('services'), auth, actor, c.req.valid('query')), 200);
  })
  .openapi(routes.exportRoute, (c) => {
    const query = c.req.valid('query');
    const stamp = c.get('services').clock.now().toISOString().slice(0, 10);
    return new Response(exportStream(c.get('services'), authOf(c), query), {
      status: 200,
      headers: {
        'content-type': contentTypes[query.format],
        'content-disposition': `attachment; filename="memories-${stamp}.${query.format}"`,
        'x-request-id': c.get('requestId'),
      },
    }) as never;
  })
  .openapi(routes.contextNowRoute, async (c) => c.json(await service.contextNow(c.get('services'), authOf(c)), 200))
  .openapi(routes.getRoute, async (c) => c.json(await service.get(c.get('services'), authOf(c), c.req.valid('param').id), 200))
  .openapi(routes.patchRoute, async (c) => {
    const { auth, actor } = actorOf(c);
    return c.json(await service.patch(c.get('services'), auth, actor, c.req.valid('param').id, c.req.valid('json')), 200);
  })
  .openapi(routes.deleteRoute, async (c) => {
    const { auth, actor } = actorOf(c);
    return c.json(await service.remove(c.get('services'), auth, actor, c.req.valid('param').id), 200);
  });
