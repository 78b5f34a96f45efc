import { createRouter } from '../../shared/platform/http/app';
import { ctxOf } from '../../shared/platform/contract/context';
import { download } from '../../shared/platform/http/download';
import { defineFamily } from '../../shared/platform/http/family';
import { exportFile } from './export';
import { purgeExpiredMemories } from './maintenance';
import * as routes from './routes';
import * as service from './service';
import { runFromRoute } from '../../shared/platform/http/verb';
import { deleteMemoryVerb, getMemoryVerb, searchVerb } from './verbs';
import { batchStorePort, storeBatch, storeMemory } from './store';
import { provideBatchStore } from '../../shared/memory/store-port';
import { provideHoldDecider } from '../../shared/memory/holds';
import { holdDecisions } from './store/decide';

provideBatchStore(batchStorePort);
provideHoldDecider(holdDecisions);

const router = createRouter()
  .openapi(routes.storeRoute, async (c) => {
    const stored = await storeMemory(ctxOf(c), c.req.valid('json'));
    return stored.status === 202 ? c.json(stored.body, 202) : c.json(stored.body, 201);
  })
  .openapi(routes.batchStoreRoute, async (c) => c.json(await storeBatch(ctxOf(c), c.req.valid('json')), 200))
  .openapi(routes.listRoute, async (c) => c.json(await service.list(ctxOf(c), c.req.valid('query')), 200))
  .openapi(routes.searchRoute, async (c) => c.json(await runFromRoute(searchVerb, c), 200))
  .openapi(routes.exportRoute, async (c) => {
    const ctx = ctxOf(c);
    const query = c.req.valid('query');
    return download(c, { ...(await exportFile(ctx, query)), name: 'memories', extension: query.format, now: ctx.now });
  })
  .openapi(routes.contextNowRoute, async (c) => c.json(await service.contextNow(ctxOf(c)), 200))
  .openapi(routes.getRoute, async (c) => c.json(await runFromRoute(getMemoryVerb, c), 200))
  .openapi(routes.patchRoute, async (c) => c.json(await service.patch(ctxOf(c), { ...c.req.valid('param'), ...c.req.valid('json') }), 200))
  .openapi(routes.deleteRoute, async (c) => c.json(await runFromRoute(deleteMemoryVerb, c), 200));

/** Store, search, list and export memories, and purge expired ones. A new family copies rollback's shape, not this one (CONTRIBUTING.md). */
export default defineFamily({
  name: 'memories',
  tag: { name: 'Memories', description: 'Store, search, list, export; modes semantic, keyword, hybrid' },
  router,
  maintenance: { expired_memories: purgeExpiredMemories },
});
