import type { Context } from 'hono';
import type { AppEnv } from '../contract/context';

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

type Definitions = readonly { type: string; route?: { method: string; path: string; operationId?: string; 'x-required-scope'?: string } }[];

/**
 * What an app knows of its own routes, filled once by `buildApp` from its OpenAPI registry: the
 * operationId of each `METHOD /hono/:path` (metrics and trace spans are labelled by it) and the
 * scope families its keyed routes need (shared/platform/contract/scopes.ts). It belongs to the app, never
 * to the process, so two apps in one process (tests build many) share nothing.
 */
export interface AppRegistry {
  readonly operations: Map<string, string>;
  readonly scopeFamilies: Set<string>;
}

export const newAppRegistry = (): AppRegistry => ({ operations: new Map(), scopeFamilies: new Set() });

/** Records the operationIds and scope families of the app's documented routes. */
export function registerOperations(registry: AppRegistry, definitions: Definitions) {
  for (const d of definitions) {
    if (d.type !== 'route' || !d.route?.operationId) continue;
    registry.operations.set(`${d.route.method.toUpperCase()} ${d.route.path.replace(/\{(\w+)\}/g, ':$1')}`, d.route.operationId);
    const scope = d.route['x-required-scope'];
    if (scope) registry.scopeFamilies.add(scope.slice(0, scope.indexOf(':')));
  }
}

/**
 * The operationId of the route that answered (after the handlers ran), `mcp` for `/mcp`, else
 * `other`: never the raw path, which can carry ids and text.
 */
export function operationOf(c: Context<AppEnv>): string {
  const path = c.req.routePath;
  const method = c.req.method === 'HEAD' ? 'GET' : c.req.method;
  return c.get('registry')?.operations.get(`${method} ${path}`) ?? (path === '/mcp' ? 'mcp' : 'other');
}
