import { Scalar } from '@scalar/hono-api-reference';
import { createApp } from '../shared/app';
import type { Services } from '../shared/services';
import { VERSION } from '../shared/services';
import { adminRouter } from './admin';
import { auditRouter } from './audit';
import { compensationsRouter } from './compensations';
import { internalRouter } from './internal';
import { keysRouter } from './keys';
import { memoriesRouter } from './memories';
import { replayRouter } from './replay';
import { rollbackRouter } from './rollback';
import { sharesRouter } from './shares';
import { spacesRouter } from './spaces';
import { systemRouter } from './system';
import { usageRouter } from './usage';

/** The whole HTTP surface; both entry points (node.ts, worker.ts) serve exactly this app. */
export function buildApp(servicesFor: Parameters<typeof createApp>[0]) {
  const app = createApp(servicesFor);
  app.route('/', systemRouter);
  app.route('/', keysRouter);
  app.route('/', usageRouter);
  app.route('/', memoriesRouter);
  app.route('/', rollbackRouter);
  app.route('/', compensationsRouter);
  app.route('/', spacesRouter);
  app.route('/', sharesRouter);
  app.route('/', auditRouter);
  app.route('/', replayRouter);
  app.route('/', adminRouter);
  app.route('/', internalRouter);

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
  app.get('/openapi.json', (c) => {
    document ??= app.getOpenAPI31Document({
      openapi: '3.1.0',
      info: {
        title: 'engram',
        version: VERSION,
        description:
          'Agent memory and change control: memories with semantic search, audit, rollback, replay and governed actions. Errors share one body: `{error, code, status, message, request_id, details?}`.',
      },
      tags: [
        { name: 'Keys', description: 'Signup, verification, rotation, revocation' },
        { name: 'Memories', description: 'Store, search, list, export; modes semantic, keyword, hybrid' },
        { name: 'Context spaces', description: 'Namespaces for memories with agent and tenant allow-lists' },
        { name: 'Sharing', description: 'Token invitations to share a tag or a space with another tenant' },
        { name: 'Audit', description: 'Tamper-evident audit trail: list, export, summary, verify' },
        { name: 'Replay', description: 'The memory store over time: timeline, snapshot at a moment, diff, per-memory lifecycle, counterfactual recall' },
        { name: 'Rollback', description: 'Point-in-time rollback of the memory store, preview and history' },
        { name: 'Compensations', description: 'Reviewable reversal plans for side-effecting trace steps (ACTION) that a rollback does not undo' },
        { name: 'Usage', description: 'Quotas, dashboard, milestones' },
        { name: 'System', description: 'Health and status probes' },
        { name: 'Operator', description: 'Operator API (ADMIN_TOKEN)' },
      ],
    });
    return c.json(document);
  });
  app.get('/docs', Scalar({ url: '/openapi.json', pageTitle: 'engram API' }));
  return app;
}

export type { Services };
