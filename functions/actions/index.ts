import type { Context } from 'hono';
import { createRouter, validationHook } from '../../shared/platform/http/app';
import { type AppEnv, ctxOf } from '../../shared/platform/contract/context';
import { AppError, errorBody } from '../../shared/platform/contract/errors';
import { defineFamily } from '../../shared/platform/http/family';
import { expirePendingActions } from './maintenance';
import * as insights from './insights';
import * as routes from './routes';
import * as s from './schemas';
import * as service from './service';
import { runFromRoute } from '../../shared/platform/http/verb';
import { approvalsVerb, explainVerb, listActionsVerb } from './verbs';

type Submitted = Awaited<ReturnType<typeof service.submit>>;

/**
 * Allowed and pending answer 200; blocked answers 403 with the error fields and the whole action
 * body, whose `status` stays the action's (`"blocked"`), as on the route's other answers.
 */
function answer(c: Context<AppEnv>, result: Submitted) {
  if (result.status !== 'blocked') return c.json({ ...result, status: result.status }, 200);
  return c.json(errorBody(new AppError('BLOCKED', result.message), c.get('requestId'), { ...result, status: result.status }), 403);
}

const parsed = <T>(target: 'param' | 'query' | 'json', result: { success: true; data: T } | { success: false; error: unknown }): T => {
  if (!result.success) validationHook()({ success: false, target, error: result.error });
  return (result as { data: T }).data;
};

/**
 * POST /v1/actions/{connector}/{operation}: routed by pattern (only the known connectors, the
 * operation may span segments), so `/v1/actions/{action_id}/result` is never shadowed; the input is
 * validated here against the documented schemas, as the router does for the other routes.
 */
async function submitByConnector(c: Context<AppEnv>) {
  const params = parsed('param', s.ConnectorParams.safeParse(c.req.param()));
  const query = parsed('query', s.ConnectorQuery.safeParse(c.req.query()));
  const header = c.req.header('x-agent-id');
  const fromHeader = header === undefined ? undefined : parsed('param', s.ConnectorQuery.shape.agent_id.safeParse(header));
  if (query.agent_id && fromHeader && query.agent_id !== fromHeader) {
    throw new AppError('VALIDATION_ERROR', 'agent_id: the query parameter and the X-Agent-Id header disagree', {
      details: [{ path: 'agent_id', message: 'disagrees with X-Agent-Id' }],
    });
  }
  if (!/^application\/(?:[\w.+-]+\+)?json\b/i.test(c.req.header('content-type') ?? '')) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'The body must be application/json');
  }
  let raw: unknown;
  try {
    raw = await c.req.json();
  } catch {
    throw new AppError('VALIDATION_ERROR', 'Malformed JSON in request body');
  }
  const body = parsed('json', s.ConnectorBody.safeParse(raw));
  const action = `${params.connector}.${params.operation.replaceAll('/', '.')}`;
  return answer(c, await service.submit(ctxOf(c), { action, params: body, agent_id: query.agent_id ?? fromHeader ?? null }));
}

const router = createRouter();
const { middleware: connectorMiddleware, ...connectorDoc } = routes.submitConnectorRoute;
router.openAPIRegistry.registerPath(connectorDoc as typeof routes.submitConnectorRoute);
router.on('POST', [routes.CONNECTOR_ROUTING_PATH], ...connectorMiddleware, submitByConnector);

router
  .openapi(routes.submitRoute, async (c) => {
    const body = c.req.valid('json');
    return answer(c, await service.submit(ctxOf(c), { action: body.action, params: body.params, agent_id: body.agent_id ?? null }));
  })
  .openapi(routes.explainRoute, async (c) => c.json(await runFromRoute(explainVerb, c), 200))
  .openapi(routes.dashboardRoute, async (c) => c.json(await insights.dashboard(ctxOf(c), c.req.valid('query')), 200))
  .openapi(routes.violationsRoute, async (c) =>
    c.json(await insights.agentViolations(ctxOf(c), { agentId: c.req.valid('param').agent_id, ...c.req.valid('query') }), 200),
  )
  .openapi(routes.listRoute, async (c) => c.json(await runFromRoute(listActionsVerb, c), 200))
  .openapi(routes.getRoute, async (c) => c.json(await service.getAction(ctxOf(c), { actionId: c.req.valid('param').action_id }), 200))
  .openapi(routes.resultRoute, async (c) =>
    c.json(await service.reportResult(ctxOf(c), { actionId: c.req.valid('param').action_id, ...c.req.valid('json') }), 200),
  )
  .openapi(routes.queueRoute, async (c) => c.json(await runFromRoute(approvalsVerb, c), 200))
  .openapi(routes.decideRoute, async (c) => {
    const body = c.req.valid('json') as s.DecisionInput | undefined;
    return c.json(await service.decide(ctxOf(c), { approvalId: c.req.valid('param').approval_id, body, query: c.req.valid('query') }), 200);
  })
  .openapi(routes.getSettingsRoute, async (c) => c.json(await service.getSettings(ctxOf(c)), 200))
  .openapi(routes.putSettingsRoute, async (c) => c.json(await service.putSettings(ctxOf(c), c.req.valid('json')), 200));

// Last: any other two-segment POST under /v1/actions/ that no route above took names an unknown
// connector. A key is still required first (401), then 404.
router.on('POST', ['/v1/actions/:connector/:operation{.+}'], ...connectorMiddleware, (c) => {
  throw new AppError('NOT_FOUND', `Unknown connector ${JSON.stringify(c.req.param('connector'))}: use POST /v1/actions with the action name`);
});

export default defineFamily({
  name: 'actions',
  tag: { name: 'Actions', description: 'Governed actions: ask before acting, policies decide, humans approve what needs a human (solo, team, enterprise)' },
  router,
  maintenance: { expired_approvals: expirePendingActions },
});
