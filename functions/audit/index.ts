import { createRouter } from '../../shared/platform/http/app';
import { ctxOf } from '../../shared/platform/contract/context';
import { download } from '../../shared/platform/http/download';
import { defineFamily } from '../../shared/platform/http/family';
import { pruneAuditRetention } from './maintenance';
import * as routes from './routes';
import * as service from './service';
import { runFromRoute } from '../../shared/platform/http/verb';
import { exportAuditVerb, listAuditVerb, verifyAuditVerb } from './verbs';

const router = createRouter()
  .openapi(routes.listRoute, async (c) => c.json(await runFromRoute(listAuditVerb, c), 200))
  .openapi(routes.exportRoute, async (c) => {
    const file = await runFromRoute(exportAuditVerb, c);
    return download(c, { ...file, name: 'audit', extension: file.format, now: ctxOf(c).now });
  })
  .openapi(routes.summaryRoute, async (c) => c.json(await service.summary(ctxOf(c), c.req.valid('query')), 200))
  .openapi(routes.verifyRoute, async (c) => c.json(await runFromRoute(verifyAuditVerb, c), 200));

export default defineFamily({
  name: 'audit',
  tag: { name: 'Audit', description: 'Tamper-evident audit trail: list, export, summary, verify' },
  router,
  maintenance: { audit_retention: pruneAuditRetention },
});
