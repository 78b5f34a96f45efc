import { createRouter } from '../../shared/platform/http/app';
import { ctxOf } from '../../shared/platform/contract/context';
import { defineFamily } from '../../shared/platform/http/family';
import { paths } from './paths';
import * as routes from './routes';
import * as service from './service';
import { runFromRoute } from '../../shared/platform/http/verb';
import { createTripleVerb } from './verbs';

const router = createRouter()
  .openapi(routes.createTripleRoute, async (c) => c.json(await runFromRoute(createTripleVerb, c), 201))
  .openapi(routes.listTriplesRoute, async (c) => c.json(await service.listTriples(ctxOf(c), c.req.valid('query')), 200))
  .openapi(routes.getTripleRoute, async (c) => c.json(await service.getTriple(ctxOf(c), { tripleId: c.req.valid('param').triple_id }), 200))
  .openapi(routes.deleteTripleRoute, async (c) => c.json(await service.deleteTriple(ctxOf(c), { tripleId: c.req.valid('param').triple_id }), 200))
  .openapi(routes.listEntitiesRoute, async (c) => c.json(await service.listEntities(ctxOf(c), c.req.valid('query')), 200))
  .openapi(routes.getEntityRoute, async (c) =>
    c.json(await service.getEntity(ctxOf(c), { entityId: c.req.valid('param').entity_id, limit: c.req.valid('query').limit }), 200),
  )
  .openapi(routes.deleteEntityRoute, async (c) => c.json(await service.deleteEntity(ctxOf(c), { entityId: c.req.valid('param').entity_id }), 200))
  .openapi(routes.pathsRoute, async (c) => c.json(await paths(ctxOf(c), c.req.valid('query')), 200));

export default defineFamily({
  name: 'knowledge',
  tag: {
    name: 'Knowledge graph',
    description: 'Entities and subject-predicate-object triples between them, entity neighbourhoods, paths; memories link to the entities they name',
  },
  router,
  restore: {
    triple: { feature: 'knowledge_graph', restore: async (ctx, body) => (await createTripleVerb(ctx, body)).triple_id.slice('urn:uuid:'.length) },
  },
});
