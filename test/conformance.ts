import type { OpenAPIHono } from '@hono/zod-openapi';
import type { ZodType } from 'zod';
import { ErrorSchema } from '../shared/platform/http/openapi';

/**
 * OpenAPI conformance for every response a test receives: the status must be one the route
 * declares, and a JSON body must match the zod schema the route declares for that status (the
 * same schema /openapi.json is built from), and a keyed route's answer past the key check carries
 * the `RateLimit-Policy` and `RateLimit` fields the limiter enforced. A mismatch throws, so the test
 * that got the response fails, naming the route, the status and the fields that do not match.
 */
type Responses = Record<string, { content?: Record<string, { schema?: unknown }> }>;
interface Declared {
  method: string;
  pattern: RegExp;
  params: number;
  path: string;
  responses: Responses;
  keyed: boolean;
}

export class ConformanceError extends Error {}

export function conformanceChecker(app: OpenAPIHono<never> | { openAPIRegistry: unknown }) {
  const definitions = (
    app.openAPIRegistry as {
      definitions: { type: string; route?: { method: string; path: string; responses: Responses; security?: Record<string, unknown>[] } }[];
    }
  ).definitions;
  const routes: Declared[] = definitions
    .filter((d) => d.type === 'route' && d.route)
    .map(({ route }) => ({
      method: route!.method.toUpperCase(),
      path: route!.path,
      params: (route!.path.match(/\{/g) ?? []).length,
      pattern: new RegExp(`^${route!.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{\w+\\?\}/g, '[^/]+')}$`),
      responses: route!.responses,
      keyed: route!.security?.some((s) => 'bearerAuth' in s && Object.keys(s).length === 1) === true && route!.security.length === 1,
    }))
    // A literal segment wins over a parameter (`/v1/memories/search` before `/v1/memories/{id}`), as in the router.
    .sort((a, b) => a.params - b.params);

  return function check(method: string, url: string, status: number, contentType: string | null, body: unknown, headers?: Headers): void {
    const path = url.split('?')[0];
    const route = routes.find((r) => (r.method === method || (method === 'HEAD' && r.method === 'GET')) && r.pattern.test(path));
    const isJson = Boolean(contentType?.includes('application/json')) && body !== null && typeof body === 'object';
    if (!route) {
      // Paths outside the document (/docs, /openapi.json, unknown paths): errors still have the one body.
      if (status >= 400 && isJson) validate(ErrorSchema, body, `${method} ${path} (no route) ${status}`);
      return;
    }
    const where = `${method} ${route.path} answered ${status}`;
    const declared = route.responses[String(status)];
    if (!declared) throw new ConformanceError(`${where}, which the route does not declare (it declares ${Object.keys(route.responses).join(', ')})`);
    const schema = declared.content?.['application/json']?.schema as ZodType | undefined;
    if (schema && isJson) validate(schema, body, where);
    // Refused before the key was checked (no key or a bad one, a body too large to read, text
    // Postgres cannot store, a path the router does not match): no limits to tell.
    const unrouted = status === 404 && String((body as { message?: unknown } | null)?.message ?? '').startsWith('No route for');
    if (headers && route.keyed && status !== 401 && status !== 413 && status !== 400 && !unrouted) {
      for (const field of ['ratelimit-policy', 'ratelimit']) {
        if (!headers.get(field)) throw new ConformanceError(`${where} without the ${field} header every keyed response carries`);
      }
    }
  };
}

function validate(schema: ZodType, body: unknown, where: string) {
  const result = schema.safeParse(body);
  if (result.success) return;
  const issues = result.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ');
  throw new ConformanceError(`${where} with a body that does not match its declared schema: ${issues}`);
}
