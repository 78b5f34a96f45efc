import type { Context } from 'hono';

/**
 * What the service counts for operators (docs/operations.md#metrics). The Node server keeps them
 * and serves them at `/metrics`; on Workers there are none (Cloudflare's own analytics count
 * requests there). No label ever holds a tenant, a key, an e-mail or any stored text.
 */
export interface Metrics {
  request(operation: string, status: number, seconds: number): void;
  /** A 429: the per-key rate window, a monthly quota, or another limit (sign-up, verification). */
  refused(limit: 'rate' | 'quota' | 'other'): void;
  webhookDelivery(outcome: 'success' | 'failure'): void;
  embedding(provider: string, outcome: 'success' | 'failure', seconds: number): void;
  /** The Prometheus text exposition of everything above and of the gauges read at scrape time. */
  render(): Promise<{ contentType: string; body: string }>;
}

/** `METHOD /hono/:path` → operationId, filled once from the OpenAPI registry of the app. */
const operations = new Map<string, string>();

/** Records the operationIds of the app's documented routes, so metrics label requests by them. */
export function registerOperations(definitions: readonly { type: string; route?: { method: string; path: string; operationId?: string } }[]) {
  for (const d of definitions) {
    if (d.type !== 'route' || !d.route?.operationId) continue;
    operations.set(`${d.route.method.toUpperCase()} ${d.route.path.replace(/\{(\w+)\}/g, ':$1')}`, d.route.operationId);
  }
}

/**
 * The operationId of the route that answered (after the handlers ran), `mcp` for `/mcp`, else
 * `other`: never the raw path, which can carry ids and text.
 */
export function operationOf(c: Context): string {
  const path = c.req.routePath;
  const method = c.req.method === 'HEAD' ? 'GET' : c.req.method;
  return operations.get(`${method} ${path}`) ?? (path === '/mcp' ? 'mcp' : 'other');
}
