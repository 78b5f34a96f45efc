import { createRouter } from '../../shared/platform/http/app';
import { publicCtxOf } from '../../shared/platform/contract/context';
import { defineFamily } from '../../shared/platform/http/family';
import { scrape, scrapeRoute } from './metrics';
import * as routes from './routes';
import { health, status } from './service';

const router = createRouter()
  .openapi(routes.healthzRoute, (c) => c.json({ status: 'ok' as const }, 200))
  .openapi(routes.healthRoute, async (c) => {
    const body = await health(publicCtxOf(c));
    return body.status === 'unhealthy' ? c.json(body, 503) : c.json(body, 200);
  })
  .openapi(routes.statusRoute, async (c) => c.json(await status(publicCtxOf(c)), 200))
  .openapi(scrapeRoute, (c) => scrape(c) as never);

export default defineFamily({ name: 'system', tag: { name: 'System', description: 'Health and status probes, metrics' }, router });
