import { createRouter } from '../../shared/platform/app';
import { ctxOf } from '../../shared/platform/context';
import { download } from '../../shared/platform/download';
import { defineFamily } from '../../shared/platform/family';
import { exportFile } from './export';
import { pruneAuditRetention } from './maintenance';
import * as routes from './routes';
import * as service from './service';
import { verify } from './verify';

const router = createRouter()
  .openapi(routes.listRoute, async (c) => c.json(await service.list(ctxOf(c), c.req.valid('query')), 200))
  .openapi(routes.exportRoute, async (c) => {
    const ctx = ctxOf(c);
    const query = c.req.valid('query');
    const file = await exportFile(ctx, query);
    return download(c, { ...file, name: 'audit', extension: query.format, now: ctx.now });
  })
  .openapi(routes.summaryRoute, async (c) => c.json(await service.summary(ctxOf(c), c.req.valid('query')), 200))
  .openapi(routes.verifyRoute, async (c) => c.json(await verify(ctxOf(c)), 200));

export default defineFamily({
  name: 'audit',
  tag: { name: 'Audit', description: 'Tamper-evident audit trail: list, export, summary, verify' },
  router,
  maintenance: { audit_retention: pruneAuditRetention },
});
