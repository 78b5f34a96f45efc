import { createRouter } from '../../shared/app';
import { authOf } from '../../shared/auth';
import { contentTypes, exportStream } from './export';
import * as routes from './routes';
import * as service from './service';
import { verify } from './verify';

export const auditRouter = createRouter()
  .openapi(routes.listRoute, async (c) => c.json(await service.list(c.get('services'), authOf(c), c.req.valid('query')), 200))
  .openapi(routes.exportRoute, async (c) => {
    const query = c.req.valid('query');
    const services = c.get('services');
    const stream = await exportStream(services, authOf(c), query);
    const stamp = services.clock.now().toISOString().slice(0, 10);
    return new Response(stream, {
      status: 200,
      headers: {
        'content-type': contentTypes[query.format],
        'content-disposition': `attachment; filename="audit-${stamp}.${query.format}"`,
        'x-request-id': c.get('requestId'),
      },
    }) as never;
  })
  .openapi(routes.summaryRoute, async (c) => c.json(await service.summary(c.get('services'), authOf(c), c.req.valid('query')), 200))
  .openapi(routes.verifyRoute, async (c) => c.json(await verify(c.get('services'), authOf(c)), 200));
