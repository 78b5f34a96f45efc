import { createRouter } from '../../shared/platform/http/app';
import { ctxOf } from '../../shared/platform/contract/context';
import { defineFamily } from '../../shared/platform/http/family';
import { policyBodyParser, policyValidationHook } from './body';
import * as routes from './routes';
import type { PolicyInput, ReplaceInput } from './schemas';
import * as service from './service';
import { runFromRoute } from '../../shared/platform/http/verb';
import { createPolicyVerb, listPoliciesVerb, replacePolicyVerb, restorePolicyVerb, testPoliciesVerb } from './verbs';

// The YAML media type is documented as a string; the body parser has turned it into this JSON by now.
const policyHook = policyValidationHook();
/** The body parser runs after the route's own middleware (key, tier gate, Idempotency-Key). */
const parsingBody = <R extends { middleware: readonly unknown[] }>(route: R): R => ({ ...route, middleware: [...route.middleware, policyBodyParser] });

// /test before /{policy_name}: the static path must win.
const router = createRouter()
  .openapi(routes.testRoute, async (c) => c.json(await runFromRoute(testPoliciesVerb, c), 200), testPoliciesVerb.hook)
  .openapi(
    parsingBody(routes.createRoute),
    async (c) => {
      const { status, body } = await createPolicyVerb.perform(ctxOf(c), c.req.valid('json') as PolicyInput);
      return status === 201 ? c.json(body, 201) : c.json(body, 200);
    },
    policyHook,
  )
  .openapi(routes.listRoute, async (c) => c.json(await runFromRoute(listPoliciesVerb, c), 200))
  .openapi(routes.getRoute, async (c) =>
    c.json(await service.getPolicy(ctxOf(c), { name: c.req.valid('param').policy_name, agentId: c.req.valid('query').agent_id ?? null }), 200),
  )
  .openapi(
    parsingBody(routes.replaceRoute),
    async (c) => {
      const body = c.req.valid('json') as ReplaceInput;
      const agentId = service.sameScope(c.req.valid('query').agent_id, body.agent_id);
      return c.json(await replacePolicyVerb.perform(ctxOf(c), { ...body, policy_name: c.req.valid('param').policy_name, agent_id: agentId }), 200);
    },
    policyHook,
  )
  .openapi(routes.deleteRoute, async (c) =>
    c.json(await service.disablePolicy(ctxOf(c), { name: c.req.valid('param').policy_name, agentId: c.req.valid('query').agent_id ?? null }), 200),
  );

export default defineFamily({
  name: 'policies',
  tag: {
    name: 'Policies',
    description: 'Rules that decide governed actions: the built-ins, your custom policies per tenant or agent, and a dry run (custom policies Starter+)',
  },
  router,
  restore: {
    policy: { feature: 'draft_policies', restore: (ctx, body) => restorePolicyVerb(ctx, body) },
  },
});
