import { createRouter } from '../../shared/platform/http/app';
import { ctxOf } from '../../shared/platform/contract/context';
import { defineFamily } from '../../shared/platform/http/family';
import * as routes from './routes';
import * as service from './service';

const router = createRouter()
  .openapi(routes.getConfigRoute, async (c) => c.json(await service.getConfig(ctxOf(c)), 200))
  .openapi(routes.patchConfigRoute, async (c) => c.json(await service.updateConfig(ctxOf(c), c.req.valid('json')), 200))
  .openapi(routes.putConfigRoute, async (c) => c.json(await service.updateConfig(ctxOf(c), c.req.valid('json')), 200))
  .openapi(routes.statusRoute, async (c) => c.json(await service.status(ctxOf(c)), 200))
  .openapi(routes.runRoute, async (c) => c.json(await service.run(ctxOf(c), c.req.valid('query')), 200))
  .openapi(routes.insightsRoute, async (c) => c.json(await service.listInsights(ctxOf(c), c.req.valid('query')), 200));

export default defineFamily({
  name: 'cortex',
  tag: {
    name: 'Cortex',
    description:
      'Experimental (SVC_ENABLE_EXPERIMENTAL=1), Pro+: memory maintenance (consolidate near duplicates, reinforce, decay) as ordinary memory updates by the actor `cortex`',
  },
  router,
  jobs: { [service.CORTEX_APPLY_TOPIC]: service.applyJob },
  maintenance: { cortex_daily: service.dailyRuns, near_duplicate_index: service.neighbourProbes },
});
