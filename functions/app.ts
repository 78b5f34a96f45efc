import { createApp } from '../shared/platform/app';
import { DOCS_SCRIPT_PATH, docsPage, docsScript } from '../shared/platform/docs';
import { withErrorCodes } from '../shared/platform/error-docs';
import { withFieldExamples } from '../shared/platform/openapi-examples';
import { VERSION } from '../shared/platform/services';
import { families } from './families';
import { mountMcp } from './mcp';
import type { Context } from 'hono';
import type { AppEnv } from '../shared/platform/context';

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
            description:
              'Agent memory and change control: memories with semantic search, audit, rollback, replay and governed actions. Errors share one body: `{error, code, status, message, request_id, details?}`; each operation lists its codes in `x-error-codes` (the table: docs/errors.md).',
          },
          servers: [{ url: c.get('services').config.PUBLIC_URL ?? '/', description: 'This deployment' }],
          tags: families.flatMap((f) => (f.tag ? [f.tag] : [])),
        }),
      ),
    ));
  app.get('/openapi.json', (c) => c.json(documentOf(c)));
  mountMcp(app, documentOf);
  app.get('/docs', docsPage);
  app.get(DOCS_SCRIPT_PATH, docsScript);
  return app;
}
