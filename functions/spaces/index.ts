import { createRouter } from '../../shared/platform/http/app';
import { ctxOf } from '../../shared/platform/contract/context';
import { defineFamily } from '../../shared/platform/http/family';
import * as routes from './routes';
import * as service from './service';
import { runFromRoute } from '../../shared/platform/http/verb';
import { createSpaceVerb } from './verbs';

const router = createRouter()
  .openapi(routes.createRoute, async (c) => c.json(await runFromRoute(createSpaceVerb, c), 201))
  .openapi(routes.listRoute, async (c) => c.json(await service.listSpaces(ctxOf(c), c.req.valid('query')), 200))
  .openapi(routes.getRoute, async (c) => c.json(await service.getSpace(ctxOf(c), { spaceId: c.req.valid('param').space_id }), 200))
  .openapi(routes.updateRoute, async (c) =>
    c.json(await service.updateSpace(ctxOf(c), { spaceId: c.req.valid('param').space_id, ...c.req.valid('json') }), 200),
  )
  .openapi(routes.deleteRoute, async (c) => {
    await service.deleteSpace(ctxOf(c), { spaceId: c.req.valid('param').space_id });
    return c.body(null, 204);
  })
  .openapi(routes.memoriesRoute, async (c) =>
    c.json(await service.spaceMemories(ctxOf(c), { spaceId: c.req.valid('param').space_id, ...c.req.valid('query') }), 200),
  );

export default defineFamily({
  name: 'spaces',
  tag: { name: 'Context spaces', description: 'Namespaces for memories with agent and tenant allow-lists' },
  router,
  restore: { space: { restore: async (ctx, body) => (await createSpaceVerb(ctx, body)).space_id.slice('urn:uuid:'.length) } },
});
