import { createRouter } from '../../shared/platform/http/app';
import { ctxOf } from '../../shared/platform/contract/context';
import { download } from '../../shared/platform/http/download';
import { defineFamily } from '../../shared/platform/http/family';
import { exportFile } from './export';
import { foldCorpusStatistics, foldLexemeStatistics, purgeExpiredMemories } from './maintenance';
import * as routes from './routes';
import * as service from './service';
import { runFromRoute } from '../../shared/platform/http/verb';
import { memorySpan } from '../../shared/platform/http/tracing';
import { toUrn } from '../../shared/platform/contract/ids';
import { deleteMemoryVerb, getMemoryVerb, searchVerb } from './verbs';
import { serverTimingOf } from './search-timing';
import { batchStorePort, storeBatch, storeMemory } from './store';
import { provideBatchStore } from '../../shared/memory/store-port';
import { provideHoldDecider } from '../../shared/memory/holds';
import { holdDecisions } from './store/decide';

provideBatchStore(batchStorePort);
provideHoldDecider(holdDecisions);

const router = createRouter()
  .openapi(routes.storeRoute, async (c) => {
    const ctx = ctxOf(c);
    const body = c.req.valid('json');
    const facts = { storeId: body.space_id && toUrn(body.space_id) };
    const stored = await memorySpan(
      ctx.services.config,
      'create_memory',
      facts,
      () => storeMemory(ctx, body),
      // A held memory is not stored yet: no record.
      (r) => (r.status === 201 ? { recordId: r.body.id, count: 1 } : { count: 0 }),
    );
    return stored.status === 202 ? c.json(stored.body, 202) : c.json(stored.body, 201);
  })
  .openapi(routes.batchStoreRoute, async (c) => {
    const ctx = ctxOf(c);
    const body = c.req.valid('json');
    const attempted = { count: body.memories.length };
    return c.json(
      await memorySpan(
        ctx.services.config,
        'create_memory',
        {},
        () => storeBatch(ctx, body),
        () => attempted,
      ),
      200,
    );
  })
  .openapi(routes.listRoute, async (c) => c.json(await service.list(ctxOf(c), c.req.valid('query')), 200))
  .openapi(routes.searchRoute, async (c) => {
    const answer = await runFromRoute(searchVerb, c);
    c.header('Server-Timing', serverTimingOf(answer));
    return c.json(answer, 200);
  })
  .openapi(routes.exportRoute, async (c) => {
    const ctx = ctxOf(c);
    const query = c.req.valid('query');
    return download(c, { ...(await exportFile(ctx, query)), name: 'memories', extension: query.format, now: ctx.now });
  })
  .openapi(routes.contextNowRoute, async (c) => c.json(await service.contextNow(ctxOf(c), c.req.valid('query')), 200))
  .openapi(routes.getRoute, async (c) => c.json(await runFromRoute(getMemoryVerb, c), 200))
  .openapi(routes.patchRoute, async (c) => {
    const ctx = ctxOf(c);
    const input = { ...c.req.valid('param'), ...c.req.valid('json') };
    const facts = { recordId: toUrn(input.id) };
    return c.json(
      await memorySpan(
        ctx.services.config,
        'update_memory',
        facts,
        () => service.patch(ctx, input),
        () => ({ count: 1 }),
      ),
      200,
    );
  })
  .openapi(routes.deleteRoute, async (c) => c.json(await runFromRoute(deleteMemoryVerb, c), 200));

/** Store, search, list and export memories, and purge expired ones. A new family copies rollback's shape, not this one (CONTRIBUTING.md). */
export default defineFamily({
  name: 'memories',
  tag: { name: 'Memories', description: 'Store, search, list, export; modes semantic, keyword, hybrid' },
  router,
  maintenance: { expired_memories: purgeExpiredMemories, corpus_statistics: foldCorpusStatistics, lexeme_statistics: foldLexemeStatistics },
});
