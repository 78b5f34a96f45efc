import { buildApp } from '../../functions/app';
import type { Feature } from '../../shared/platform/contract/tiers';

/**
 * Every route of the app, read from its OpenAPI registry (no database needed), so the security
 * suite covers a route the moment it is mounted, without anyone listing it.
 */
export interface RouteEntry {
  method: string;
  /** `memories.search`: verb-style, family first. */
  operationId: string;
  /**
   * The scope a restricted key needs, as the route declares it (`x-required-scope`): its operationId's
   * family unless it names another (`keyRoute({ scopeFamily })`), read for GET and HEAD, else write.
   */
  scope?: string;
  /** OpenAPI form: `/v1/memories/{id}`. */
  path: string;
  access: 'key' | 'optional' | 'public' | 'admin';
  pathParams: string[];
  /** Top-level fields of the JSON body schema, if it has one. */
  bodyFields: string[];
  hasBody: boolean;
  /** The tier gate it declares (`keyRoute({ feature })`). */
  feature?: Feature;
  /** Whether it honours a key confined to an agent or to spaces (`keyRoute({ confinable })`). */
  confinable: boolean;
}

type Definition = {
  type: string;
  route?: {
    method: string;
    path: string;
    operationId?: string;
    'x-required-feature'?: Feature;
    'x-confinable'?: true;
    'x-required-scope'?: string;
    security?: Record<string, unknown>[];
    request?: { params?: { shape?: object }; body?: { content?: Record<string, { schema?: { shape?: object } }> } };
  };
};

function accessOf(security: Record<string, unknown>[] | undefined): RouteEntry['access'] {
  if (!security?.length) return 'public';
  const keys = security.map((s) => Object.keys(s)[0]);
  if (keys.includes('adminToken')) return 'admin';
  if (keys.includes(undefined as never)) return 'optional';
  return keys.includes('bearerAuth') ? 'key' : 'public';
}

export function routeTable(): RouteEntry[] {
  const app = buildApp(() => {
    throw new Error('the route table is read without serving requests');
  });
  const definitions = (app.openAPIRegistry as unknown as { definitions: Definition[] }).definitions;
  return definitions
    .filter((d) => d.type === 'route' && d.route)
    .map(({ route }) => {
      const r = route!;
      const body = r.request?.body?.content?.['application/json']?.schema;
      return {
        method: r.method.toUpperCase(),
        operationId: r.operationId ?? '',
        path: r.path,
        access: accessOf(r.security),
        pathParams: [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]),
        bodyFields: Object.keys(body?.shape ?? {}),
        hasBody: Boolean(body),
        feature: r['x-required-feature'],
        confinable: r['x-confinable'] === true,
        scope: r['x-required-scope'],
      };
    });
}

/** `/v1/memories/{id}` with the given values put in. */
export const fillPath = (path: string, values: Record<string, string>) =>
  path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(values[name] ?? 'x'));

/**
 * The console's routes (functions/console), from the table the app mounts them from: the suite
 * walks them without anyone listing them here.
 */
export { consoleRoutes } from '../../functions/console';

/** `/console/approvals/:approval_id/decision` with the given values put in. */
export const fillConsolePath = (path: string, values: Record<string, string>) =>
  path.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(values[name] ?? 'x'));
