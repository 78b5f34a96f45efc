import { createRoute } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler } from 'hono';
import { bearerToken } from '../../shared/platform/http/auth';
import { type AppEnv } from '../../shared/platform/contract/context';
import { isLoopbackHost } from '../../shared/platform/contract/config';
import { timingSafeEqual } from '../../shared/platform/contract/crypto';
import { AppError } from '../../shared/platform/contract/errors';
import { errors, serverErrors } from '../../shared/platform/http/openapi';

/**
 * Who may scrape: with METRICS_TOKEN set, a caller with that bearer token; without it, loopback
 * clients only (a Prometheus on the same host). Workers keep no metrics: 404 there.
 */
const requireScraper: MiddlewareHandler<AppEnv> = async (c, next) => {
  const services = c.get('services');
  if (!services.metrics) throw new AppError('NOT_FOUND', 'Metrics are served by the Node server; on Workers use Cloudflare analytics');
  const expected = services.config.METRICS_TOKEN;
  if (expected) {
    const given = bearerToken(c.req.header('authorization'));
    if (!given || !timingSafeEqual(given, expected)) throw new AppError('UNAUTHORIZED', 'Invalid metrics token');
  } else {
    const ip = services.clientIp(c);
    if (ip === null || !isLoopbackHost(ip))
      throw new AppError('FORBIDDEN', 'Metrics are served to loopback clients only; set METRICS_TOKEN to scrape from elsewhere');
  }
  await next();
};

export const scrapeRoute = createRoute({
  tags: ['System'],
  middleware: [requireScraper],
  security: [{ metricsToken: [] }],
  operationId: 'system.metrics',
  method: 'get' as const,
  path: '/metrics',
  summary: 'Prometheus metrics of this Node process',
  description:
    'The Prometheus text exposition (version 0.0.4): requests by operationId and status with a latency histogram, the Postgres pool in use and waiting, the outbox depth and the age of its oldest job, webhook deliveries by outcome, embedding calls and their latency, and 429 refusals by limit. No label carries a tenant, a key or stored text. With `METRICS_TOKEN` set it needs that bearer token; without it only loopback clients may scrape. Node only: 404 on Workers.',
  responses: {
    200: { description: 'The metrics', content: { 'text/plain': { schema: { type: 'string' } } } },
    ...errors(400, 401, 403, 404),
    ...serverErrors(),
  },
});

/** The handler of `system.metrics`. */
export async function scrape(c: Context<AppEnv>) {
  const { contentType, body } = await c.get('services').metrics!.render();
  return c.body(body, 200, { 'content-type': contentType, 'cache-control': 'no-store' });
}
