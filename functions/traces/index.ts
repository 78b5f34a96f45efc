import { createRouter } from '../../shared/platform/http/app';
import { ctxOf } from '../../shared/platform/contract/context';
import { defineFamily } from '../../shared/platform/http/family';
import { interruptIdleTraces } from './maintenance';
import * as routes from './routes';
import * as service from './service';
import { certificateVerb, getTraceVerb, listTracesVerb } from './verbs';
import { runFromRoute } from '../../shared/platform/http/verb';
import { verifyTrace } from './verify';

const id = (c: { req: { valid(t: 'param'): { trace_id: string } } }) => c.req.valid('param').trace_id;

// public-key before {trace_id}: the static path must win.
const router = createRouter()
  .openapi(routes.publicKeyRoute, async (c) => c.json(await service.publicKey(ctxOf(c)), 200))
  .openapi(routes.startRoute, async (c) => c.json(await service.startTrace(ctxOf(c), c.req.valid('json')), 201))
  .openapi(routes.listRoute, async (c) => c.json(await runFromRoute(listTracesVerb, c), 200))
  .openapi(routes.addStepRoute, async (c) => c.json(await service.addStep(ctxOf(c), { traceId: id(c), ...c.req.valid('json') }), 201))
  .openapi(routes.completeRoute, async (c) => c.json(await service.completeTrace(ctxOf(c), { traceId: id(c) }), 200))
  .openapi(routes.getRoute, async (c) => c.json(await runFromRoute(getTraceVerb, c), 200))
  .openapi(routes.verifyRoute, async (c) => c.json(await verifyTrace(ctxOf(c), { traceId: id(c) }), 200))
  .openapi(routes.certificateRoute, async (c) => c.json(await runFromRoute(certificateVerb, c), 200));

export default defineFamily({
  name: 'traces',
  tag: { name: 'Traces', description: 'Hash-chained reasoning traces, sealed with an RSA-4096 signature anyone can verify (Pro+)' },
  router,
  maintenance: { idle_traces: interruptIdleTraces },
});
