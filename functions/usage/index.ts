import { createRouter } from '../../shared/platform/http/app';
import { ctxOf } from '../../shared/platform/contract/context';
import { defineFamily } from '../../shared/platform/http/family';
import * as routes from './routes';
import { dashboardReport, milestones, usageReport } from './service';

const router = createRouter()
  .openapi(routes.usageRoute, async (c) => c.json(await usageReport(ctxOf(c), c.get('counted')), 200))
  .openapi(routes.dashboardRoute, async (c) => c.json(await dashboardReport(ctxOf(c), c.get('counted')), 200))
  .openapi(routes.milestonesRoute, async (c) => c.json(await milestones(ctxOf(c)), 200));

export default defineFamily({ name: 'usage', tag: { name: 'Usage', description: 'Quotas, dashboard, milestones' }, router });
