import { runFromRoute } from '../../shared/platform/http/verb';
import { createBaselineVerb } from './verbs';
import { createRouter } from '../../shared/platform/http/app';
import { ctxOf } from '../../shared/platform/contract/context';
import { defineFamily } from '../../shared/platform/http/family';
import * as routes from './routes';
import * as service from './service';

const router = createRouter()
  .openapi(routes.runRoute, async (c) => c.json(await service.run(ctxOf(c), c.req.valid('json')), 200))
  .openapi(routes.gateRoute, async (c) => c.json(await service.gate(ctxOf(c), c.req.valid('json')), 200))
  .openapi(routes.historyRoute, async (c) => c.json(await service.history(ctxOf(c), c.req.valid('query')), 200))
  .openapi(routes.driftRoute, async (c) => c.json(await service.driftReport(ctxOf(c), c.req.valid('query')), 200))
  .openapi(routes.createBaselineRoute, async (c) => c.json(await runFromRoute(createBaselineVerb, c), 201))
  .openapi(routes.listBaselinesRoute, async (c) => c.json(await service.listBaselines(ctxOf(c)), 200))
  .openapi(routes.deleteBaselineRoute, async (c) => {
    await service.deleteBaseline(ctxOf(c), { baselineId: c.req.valid('param').baseline_id });
    return c.body(null, 204);
  });

export default defineFamily({
  name: 'eval',
  tag: { name: 'Eval', description: 'Experimental (SVC_ENABLE_EXPERIMENTAL=1): memory health scores, a CI gate on them, history, drift and recall baselines' },
  router,
  maintenance: { eval_history: service.pruneHistory },
});
