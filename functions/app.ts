import { createApp } from '../shared/platform/http/app';
import { DOCS_SCRIPT_PATH, docsPage, docsScript } from '../shared/platform/http/docs';
import { withErrorCodes } from '../shared/platform/contract/error-docs';
import { registerOperations } from '../shared/platform/http/metrics';
import { withFieldExamples } from '../shared/platform/contract/openapi-examples';
import { VERSION } from '../shared/platform/contract/services';
import { hasFeature } from '../shared/platform/contract/tiers';
import { DAY } from '../shared/platform/contract/time';
import { SIGNUP_WINDOW_MS, SIGNUPS_PER_IP } from './keys';
import { families } from './families';
import { mountConsole } from './console';
import { mountMcp } from './mcp';
import { mountOAuth } from './oauth';
import type { Context } from 'hono';
import type { AppEnv } from '../shared/platform/contract/context';

/** The free tier's refusals a newcomer meets first, from the tier table so the text cannot drift from it. */
const freeLacks = (['audit_verify', 'replay', 'traces', 'spaces', 'sharing', 'webhooks', 'teams'] as const).filter((f) => !hasFeature('free', f));

/** The front page of /docs: what the service is, and how to get the key every call needs. */
const INFO_DESCRIPTION = `Agent memory and change control: memories with semantic search, audit, rollback, replay and governed actions.

## Get an API key

Every \`/v1\` call except signup and verify needs \`Authorization: Bearer sk_...\`. Put the key in **bearerAuth** under Authentication on this page and the examples send it.

- **Sign up:** \`POST /v1/keys\` with \`{"email": "you@example.com"}\` mails a verification token; \`POST /v1/verify\` with \`{"email", "token"}\` answers the key, shown once. Signup keys are on the free tier. At most ${SIGNUPS_PER_IP} signups per client IP address in any ${SIGNUP_WINDOW_MS / DAY} days.
- **On a server of your own:** \`POST /admin/v1/tenants\` with \`Authorization: Bearer $ADMIN_TOKEN\` and \`{"email": "you@example.com", "tier": "pro"}\` answers a key at once, at any tier, with no signup limit (\`GET /admin/v1/mail\` shows the mail the server would have sent). Plain \`npm start\` on embedded storage prints a one-time operator token and this command.

A free key answers 403 to ${freeLacks.map((f) => f.replace('_', ' ')).join(', ')} and more; the body's \`required_tier\` names the tier that has the feature, and \`GET /v1/usage\` lists the key's features.

## Errors

Errors share one body: \`{error, code, status, message, request_id, details?}\`; each operation lists its codes in \`x-error-codes\` (the table: docs/errors.md).`;

/** The whole HTTP surface; both entry points (node.ts, worker.ts) serve exactly this app. */
export function buildApp(servicesFor: Parameters<typeof createApp>[0]) {
  const app = createApp(servicesFor);
  for (const family of families) app.route('/', family.router);

  app.openAPIRegistry.registerComponent('securitySchemes', 'bearerAuth', {
    type: 'http',
    scheme: 'bearer',
    description: 'API key from POST /v1/verify or POST /v1/keys/rotate (sk_...)',
  });
  app.openAPIRegistry.registerComponent('securitySchemes', 'adminToken', {
    type: 'http',
    scheme: 'bearer',
    description: 'Operator token (ADMIN_TOKEN); the operator API exists only when it is set',
  });
  app.openAPIRegistry.registerComponent('securitySchemes', 'metricsToken', {
    type: 'http',
    scheme: 'bearer',
    description: 'Metrics token (METRICS_TOKEN) for /metrics; without it only loopback clients may scrape',
  });
  // Metrics label each request by the operationId of the route that answered it; restricted keys
  // name the scope families of these routes. Both belong to this app (shared/platform/http/metrics.ts).
  registerOperations(app.registry, (app.openAPIRegistry as unknown as { definitions: Parameters<typeof registerOperations>[1] }).definitions);

  // Building the document walks every schema; do it once per process, on first request.
  let document: unknown;
  const documentOf = (c: Context<AppEnv>) =>
    (document ??= withErrorCodes(
      withFieldExamples(
        app.getOpenAPI31Document({
          openapi: '3.1.0',
          info: {
            title: 'engram',
            version: VERSION,
            license: { name: 'Apache-2.0', url: 'https://www.apache.org/licenses/LICENSE-2.0' },
            description: INFO_DESCRIPTION,
          },
          servers: [{ url: c.get('services').config.PUBLIC_URL ?? '/', description: 'This deployment' }],
          tags: families.flatMap((f) => (f.tag ? [f.tag] : [])),
        }),
      ),
    ));
  app.get('/openapi.json', (c) => c.json(documentOf(c)));
  mountMcp(app, documentOf);
  mountOAuth(app);
  mountConsole(app);
  // The root: where to go from here, for a person or a client that lands on the bare address.
  app.get('/', (c) => c.json({ name: 'engram', version: VERSION, docs: '/docs', openapi: '/openapi.json', console: '/console' }));
  app.get('/docs', docsPage);
  app.get(DOCS_SCRIPT_PATH, docsScript);
  return app;
}
