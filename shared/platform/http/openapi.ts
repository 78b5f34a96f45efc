import { createRoute, z } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../contract/context';
import { experimentalGate, featureGate, optionalKey, requireKey } from './auth';
import { idempotency, idempotencyParameter } from '../data/idempotency';
import { AppError, type ErrorCode, errorCodes } from '../contract/errors';
import { requiredScope, scopeGate } from '../contract/scopes';
import { type Feature, tierRefusal } from '../contract/tiers';
import { streamedBodyPaths } from '../limits/streamed-body';

export const ErrorSchema = z
  .object({
    error: z.string().openapi({ example: 'importance: Too big: expected number to be <=10' }),
    code: z
      .enum(Object.keys(errorCodes) as [ErrorCode, ...ErrorCode[]])
      .openapi({ example: 'VALIDATION_ERROR', description: 'One of the codes in docs/errors.md' }),
    status: z.number().int().openapi({ example: 400 }),
    message: z.string(),
    request_id: z.string().openapi({ example: 'req_4f9Qw2b8Zr1LmT0aXcVe3K' }),
    details: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
    usage: z
      .object({
        metric: z.string().openapi({ example: 'api_calls' }),
        current: z.number(),
        limit: z.number(),
        plan: z.string(),
        resets_at: z.string().nullable().openapi({ description: 'When a quota resets; null for a count the tier caps' }),
      })
      .optional()
      .openapi({ description: 'On a limit refusal (429 RATE_LIMITED, 403 svc_ram.v1.tier.limit_exceeded): the counter at its limit' }),
    upgrade_url: z.string().optional(),
    required_tier: z.string().optional(),
    current_tier: z.string().optional(),
    required_scope: z
      .string()
      .optional()
      .openapi({ example: 'memories:write', description: 'On a restricted key refused (403 FORBIDDEN): the scope the call needs' }),
  })
  .openapi('Error');

const descriptions: Record<number, string> = {
  400: 'Invalid input (VALIDATION_ERROR)',
  401: 'Missing, unknown, revoked or expired key (UNAUTHORIZED)',
  403: 'Tier, limit, ownership or scope refusal (a restricted key without the scope: FORBIDDEN with `required_scope`)',
  404: 'Unknown resource (NOT_FOUND)',
  409: 'Conflict (CONFLICT; also a request with the same Idempotency-Key still running)',
  413: 'Body larger than 1 MiB (PAYLOAD_TOO_LARGE)',
  415: 'Body is not application/json (UNSUPPORTED_MEDIA_TYPE)',
  422: 'A range that starts after it ends (INVALID_RANGE)',
  429: 'Rate or quota limit (RATE_LIMITED); carries usage and Retry-After',
  501: 'The relational backend is needed (REQUIRES_POSTGRES)',
  500: 'Internal error (INTERNAL_ERROR); details are in the server log under the request id',
  503: 'A dependency is unavailable (SERVICE_UNAVAILABLE: the database, or an embedding provider); retry after Retry-After',
};

/** OpenAPI error responses for the given statuses, all with the one error body. */
export function errors(...statuses: number[]) {
  return Object.fromEntries(
    statuses.map((s) => [s, { description: descriptions[s] ?? 'Error', content: { 'application/json': { schema: ErrorSchema } } }]),
  ) as Record<number, { description: string; content: { 'application/json': { schema: typeof ErrorSchema } } }>;
}

export const json = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { 'application/json': { schema } },
});

export const jsonBody = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { 'application/json': { schema } },
});

type RouteConfig = Parameters<typeof createRoute>[0];
type Declared = Omit<RouteConfig, 'middleware' | 'security' | 'operationId'> & {
  /** Verb-style, family first: `memories.search`. Every operation has one. */
  operationId: `${string}.${string}`;
};

/**
 * Errors a route can answer without its handler running: 400 for input that fails validation (every
 * route: a NUL character in the URL is refused before any handler, shared/platform/contract/input-text.ts), and
 * for a JSON body also 413 (over the body limit) and 415 (not JSON).
 */
function inputErrors(config: Declared) {
  return errors(...(config.request?.body ? [400, 413, 415] : [400]));
}

const REUSED_KEY = 'an Idempotency-Key reused with a different request (VALIDATION_ERROR)';

/** A POST's 422: the route's own (a range, a failed gate) and also the reused Idempotency-Key. */
function reusedKeyResponse(own: { description?: string } | undefined) {
  if (own) return { ...own, description: `${own.description ?? 'Error'}; also ${REUSED_KEY}` };
  return { description: `Unprocessable: ${REUSED_KEY}`, content: { 'application/json': { schema: ErrorSchema } } };
}

/** Any route can fail inside (500) or find its database away (503 SERVICE_UNAVAILABLE, Retry-After). */
export const serverErrors = () => errors(500, 503);

/** Appended to the description of a gated route, so readers of /docs see the tier rule. */
const gateNote = (feature: Feature) => {
  const rule = tierRefusal(feature);
  return `Requires the ${rule.requiredTier} tier or higher (feature \`${feature}\`); a lower tier is answered 403 ${rule.code}.`;
};

/** Appended to the description of an experimental route. */
const experimentalNote =
  'Experimental: off unless the deployment sets `SVC_ENABLE_EXPERIMENTAL=1`; until then every call with a valid key is answered 403 `svc_ram.v1.experimental.disabled`, before any tier check.';

const experimentalRefusal = (feature: Feature | undefined) => ({
  403: {
    description: `Experimental surface not enabled (svc_ram.v1.experimental.disabled)${feature ? `; then the tier refusal (${tierRefusal(feature).code})` : ''}; a restricted key without the scope (FORBIDDEN with \`required_scope\`)`,
    content: { 'application/json': { schema: ErrorSchema } },
  },
});

/**
 * On a route whose JSON body is optional, a body sent empty is no body: clients that set
 * `Content-Type: application/json` on every request (and send the fields as query parameters) would
 * otherwise get 400 "Malformed JSON".
 */
const emptyBodyIsNoBody: MiddlewareHandler = async (c, next) => {
  const req = c.req.raw;
  // c.req.text() keeps the body in Hono's cache, where the JSON validator reads it again.
  if (req.headers.has('content-type') && (!req.body || (await c.req.text()).trim() === '')) {
    const headers = new Headers(req.headers);
    headers.delete('content-type');
    headers.delete('content-length');
    c.req.raw = new Request(req.url, { method: req.method, headers });
  }
  await next();
};

type Def = { type: string; shape?: Record<string, unknown>; catchall?: { _zod: { def: Def } }; in?: Inner; out?: Inner; innerType?: Inner };
type Inner = { _zod?: { def: Def } };
const WRAPPERS = new Set(['optional', 'nullable', 'default', 'prefault', 'readonly', 'catch', 'nonoptional']);

/** The top-level field names of an object body schema, or null when it takes any fields. */
function fieldsOf(schema: Inner | undefined, depth = 0): Set<string> | null {
  const def = schema?._zod?.def;
  if (!def || depth > 8) return null;
  if (def.type === 'object') {
    const open = def.catchall !== undefined && def.catchall._zod.def.type !== 'never';
    return open ? null : new Set(Object.keys(def.shape ?? {}));
  }
  if (def.type === 'pipe') return fieldsOf(def.in, depth + 1) ?? fieldsOf(def.out, depth + 1);
  if (WRAPPERS.has(def.type)) return fieldsOf(def.innerType, depth + 1);
  return null;
}

/** Edit distance, for "did you mean" on a misspelt field (short names only). */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length]!;
}

function unknownFieldMessage(field: string, known: Set<string>): string {
  const near = [...known].filter((k) => distance(field.toLowerCase(), k.toLowerCase()) <= 2).sort((a, b) => distance(field, a) - distance(field, b))[0];
  return near ? `unknown field; did you mean ${near}?` : `unknown field; this body takes ${[...known].join(', ')}`;
}

/**
 * A JSON body field the route does not take is refused (400 VALIDATION_ERROR naming it), as Stripe
 * does: a misspelt optional field (`tag` for `tags`) would otherwise be dropped and the request
 * succeed without it. Only the top level: nested free-form objects (metadata, params) take anything.
 */
function refuseUnknownFields(schema: unknown): MiddlewareHandler | null {
  const known = fieldsOf(schema as Inner);
  if (!known) return null;
  return async (c, next) => {
    if (/json/i.test(c.req.header('content-type') ?? '') && c.req.raw.body) {
      let body: unknown;
      try {
        body = await c.req.json();
      } catch {
        return next(); // malformed JSON: the validator answers it
      }
      const unknown = body && typeof body === 'object' && !Array.isArray(body) ? Object.keys(body).filter((k) => !known.has(k)) : [];
      if (unknown.length) {
        const details = unknown.map((path) => ({ path, message: unknownFieldMessage(path, known) }));
        throw new AppError('VALIDATION_ERROR', `Invalid body: ${details.map((d) => `${d.path}: ${d.message}`).join('; ')}`, { details });
      }
    }
    await next();
  };
}

/**
 * A body check whose VALIDATION_ERROR the route answers with another of the code's statuses (a
 * webhook's body: 422, as the contract says). Only the check's own refusal: what runs after it
 * (`next`) answers for itself.
 */
const answeredWith =
  (status: 422, check: MiddlewareHandler<AppEnv>): MiddlewareHandler<AppEnv> =>
  async (c, next) => {
    try {
      await check(c, next);
    } catch (err) {
      throw err instanceof AppError && err.code === 'VALIDATION_ERROR' ? (err as AppError<'VALIDATION_ERROR'>).withStatus(status) : err;
    }
  };

const strictBody = (config: Declared) => {
  const media = config.request?.body?.content?.['application/json'];
  const check = refuseUnknownFields(media && 'schema' in media ? media.schema : undefined);
  return check ? [check] : [];
};

/**
 * A route that needs a key: authentication, rate limit and quota run before the handler, then the
 * scope check of a restricted key (shared/platform/contract/scopes.ts: the scope family is the operationId's
 * prefix unless `scopeFamily` names another; the document states the scope as `x-required-scope`;
 * `confinable` says the route honours a key's `agent_id` and `space_ids`, which every other route
 * refuses), then the tier gate when the route
 * names a `feature`, then (on a POST) `Idempotency-Key`
 * (shared/platform/data/idempotency.ts). The document gets the security requirement, the 401/429 (403
 * for a restricted key's scope and for gated routes), the idempotency header and its errors, and the input errors.
 */
export function keyRoute<
  const R extends Declared & { feature?: Feature; experimental?: true; confinable?: true; streamedBody?: true; scopeFamily?: string; validationStatus?: 422 },
>(config: R) {
  const { feature, experimental, confinable, streamedBody, scopeFamily, validationStatus, ...route } = config;
  const scope = requiredScope(route.operationId, route.method, scopeFamily);
  if (streamedBody) streamedBodyPaths.add(route.path);
  // A streamed body is read once, by the handler: no Idempotency-Key (it would read the body first).
  const post = route.method === 'post' && !streamedBody;
  const optionalBody = route.request?.body?.required === false;
  const middleware = [
    ...(optionalBody ? [emptyBodyIsNoBody] : []),
    requireKey,
    scopeGate(route.operationId, scope, confinable === true),
    ...(experimental ? [experimentalGate] : []),
    ...(feature ? [featureGate(feature)] : []),
    ...(post ? [idempotency] : []),
    ...(streamedBody ? [] : strictBody(config).map((check) => (validationStatus ? answeredWith(validationStatus, check) : check))),
  ];
  const notes = [route.description, experimental ? experimentalNote : undefined, feature ? gateNote(feature) : undefined].filter(Boolean);
  const gated = Boolean(feature || experimental);
  return createRoute({
    ...route,
    ...(gated ? { description: notes.join('\n\n') } : {}),
    ...(feature ? { 'x-required-feature': feature } : {}),
    ...(experimental ? { 'x-experimental': true } : {}),
    ...(confinable ? { 'x-confinable': true } : {}),
    'x-required-scope': scope,
    ...(post ? { parameters: [...(route.parameters ?? []), idempotencyParameter] } : {}),
    middleware,
    security: [{ bearerAuth: [] }],
    responses: {
      ...inputErrors(config),
      ...errors(401, 403, 429, ...(post ? [400, 409] : [])),
      ...(experimental ? experimentalRefusal(feature) : {}),
      ...serverErrors(),
      ...route.responses,
      ...(post ? { 422: reusedKeyResponse((route.responses as Record<number, { description?: string }> | undefined)?.[422]) } : {}),
    },
  } as unknown as Omit<R, 'feature' | 'experimental' | 'confinable' | 'streamedBody' | 'scopeFamily' | 'validationStatus'> & {
    middleware: typeof middleware;
    security: { bearerAuth: string[] }[];
  });
}

/** A public route that shows more to a caller with a valid key; a key that is sent but not valid is 401. */
export function optionalKeyRoute<const R extends Declared>(config: R) {
  return createRoute({
    ...config,
    middleware: [optionalKey, ...strictBody(config)],
    security: [{}, { bearerAuth: [] }],
    responses: { ...inputErrors(config), ...errors(401), ...serverErrors(), ...config.responses },
  } as unknown as R & { middleware: [typeof optionalKey] });
}

/** A route anyone may call (signup, verify, probes): it declares that no key is needed. */
export function publicRoute<const R extends Declared & { security?: RouteConfig['security'] }>(config: R) {
  const strict = strictBody(config);
  return createRoute({
    security: [],
    ...(strict.length ? { middleware: strict } : {}),
    ...config,
    responses: { ...inputErrors(config), ...serverErrors(), ...config.responses },
  } as R);
}
