import { streamedBodyPaths } from '../limits/streamed-body';
import { OpenAPIHono } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { requestId } from 'hono/request-id';
import { HTTPException } from 'hono/http-exception';
import type { Result, Router } from 'hono/router';
import { TrieRouter } from 'hono/router/trie-router';
import type { output, ZodError, ZodType } from 'zod';
import type { AppEnv } from '../contract/context';
import { errorFields } from '../contract/error-fields';
import {
  AppError,
  type ErrorCode,
  type ErrorDetail,
  errorBody,
  invalidRange,
  SHOULD_RETRY_HEADER,
  type StatusOf,
  shouldRetry,
  shouldRetryOf,
} from '../contract/errors';
import { newId } from '../contract/ids';
import { rejectNulInUrl, rejectUnsafeBody } from '../contract/input-text';
import { newAppRegistry, operationOf } from './metrics';
import { traceRequest } from './tracing';
import { uniqueViolation } from '../data/pg-errors';
import { answerMethodNotAllowed } from './method-not-allowed';
import { countErrorResponse } from '../limits/response-counts';
import type { Services } from '../contract/services';
import { databaseUnavailable, isClientAbort, isDatabaseUnavailable } from './unavailable';

export const MAX_BODY_BYTES = 1024 * 1024;

function zodDetails(error: ZodError): ErrorDetail[] {
  return error.issues.map((i) => ({ path: i.path.join('.') || '(body)', message: i.message }));
}

/** A range check declared in the schema (`withRange`) answers 422 INVALID_RANGE, not 400. */
function rangeIssue(error: ZodError) {
  const issue = error.issues.find((i) => i.code === 'custom' && (i as { params?: { code?: string } }).params?.code === 'INVALID_RANGE');
  return issue && { start: issue.path.join('.'), end: String((issue as { params?: { end?: string } }).params?.end) };
}

/** Turns a failed validation into the one error body (400 VALIDATION_ERROR), naming each bad field. */
/** Which limit a 429 reports, from its `usage` (the metric it counts). */
const limitOf = (usage: unknown): 'rate' | 'quota' | 'other' => {
  const metric = (usage as { metric?: unknown } | undefined)?.metric;
  if (metric === 'requests_per_minute') return 'rate';
  return typeof metric === 'string' ? 'quota' : 'other';
};

/** Retry-After of a 429 or 503 whose error carries no `retry_after` of its own, in seconds. */
const DEFAULT_RETRY_AFTER: Record<number, number | undefined> = { 429: 60, 503: 1 };

export function validationHook(status?: StatusOf<'VALIDATION_ERROR'>) {
  return (result: { success: boolean; target?: string; error?: unknown }): undefined => {
    if (result.success) return undefined;
    throw inputFailure(result.error as ZodError, result.target ?? 'json', status);
  };
}

/** The refusal of input that fails its schema: 422 INVALID_RANGE for a `withRange` check, else 400 VALIDATION_ERROR. */
export function inputFailure(error: ZodError, target: string, status?: StatusOf<'VALIDATION_ERROR'>): AppError {
  const range = rangeIssue(error);
  if (range) return invalidRange(range.start, range.end);
  return validationFailure(error, target, status);
}

/** The error a failed validation answers with (also for one item of a batch body, validated on its own). */
export function validationFailure(error: ZodError, target: string, status?: StatusOf<'VALIDATION_ERROR'>): AppError {
  const details = zodDetails(error);
  const summary = details.map((d) => `${d.path}: ${d.message}`).join('; ');
  return new AppError('VALIDATION_ERROR', `Invalid ${targetNames[target] ?? target}: ${summary}`, { details }, status);
}

/**
 * A verb's own check of its input with the schema its route validates, so a caller that is not
 * the route (an import) gets the route's refusal: 400 VALIDATION_ERROR naming each bad field.
 */
export function validInput<S extends ZodType>(
  schema: S,
  input: unknown,
  refusal: (error: ZodError) => AppError = (e) => validationFailure(e, 'json'),
): output<S> {
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw refusal(parsed.error);
  return parsed.data;
}

/** How a message names what failed: the validator's targets as a client knows them. */
const targetNames: Record<string, string> = { json: 'body', form: 'body', param: 'path parameter', query: 'query parameter', header: 'header' };

/** A family router. Validation failures use the one error body, naming each bad field. */
type Socket = { localAddress?: string; localPort?: number; encrypted?: boolean };

/** The MCP endpoint and its protected-resource metadata (RFC 9728), which OAuth's documents name too. */
export const MCP_PATH = '/mcp';
export const RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';

/**
 * Where this server is reached, for the absolute URLs it hands out: PUBLIC_URL, else the address
 * the connection came in on (Node), else none (Workers without PUBLIC_URL). Never the request's
 * Host, which the caller chooses: a 401 would point a client at a metadata URL an attacker named,
 * and a share's link would send its recipient, with the token, to a host the caller named.
 */
export function publicBase(c: Context<AppEnv>): string | null {
  const configured = c.get('services').config.PUBLIC_URL;
  if (configured) return configured.replace(/\/+$/, '');
  const socket = (c.env as { incoming?: { socket?: Socket } } | undefined)?.incoming?.socket;
  if (!socket?.localAddress || !socket.localPort) return null;
  const address = socket.localAddress.replace(/^::ffff:(?=\d+\.)/, '');
  const host = address.includes(':') ? `[${address}]` : address;
  return `${socket.encrypted ? 'https' : 'http'}://${host}:${socket.localPort}`;
}

export function createRouter() {
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook() });
}

const statusCodes: Partial<Record<number, ErrorCode>> = {
  400: 'VALIDATION_ERROR',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
};

/** Anything thrown becomes an AppError; unknown errors are logged and answered without internals. */
export function toAppError(err: unknown, services: Services | undefined, requestId: string): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof HTTPException) {
    const code = statusCodes[err.status] ?? (err.status >= 500 ? 'INTERNAL_ERROR' : 'VALIDATION_ERROR');
    const message =
      err.status === 400 && /json/i.test(err.message)
        ? 'Malformed JSON in request body'
        : err.status === 415
          ? 'Send the body as JSON with the header Content-Type: application/json'
          : err.message;
    return new AppError(code, message || code);
  }
  const conflict = uniqueViolation(err);
  if (conflict) return conflict;
  if (isDatabaseUnavailable(err)) {
    services?.log.warn('database unavailable', { request_id: requestId, ...errorFields(err) });
    return databaseUnavailable();
  }
  services?.log.error('unhandled error', { request_id: requestId, ...errorFields(err) });
  return new AppError('INTERNAL_ERROR', 'Internal server error');
}

/**
 * Hono's RegExpRouter cannot keep `/v1/memories/search` ahead of `/v1/memories/:id`, so routing
 * falls back to the TrieRouter, which walks, allocates and sorts on every request. A match whose
 * handlers take no path parameters depends only on method and path: those are remembered (short
 * paths only, in a bounded map emptied when full, so stray paths cannot grow it).
 */
export class CachedTrieRouter<T> implements Router<T> {
  readonly name = 'CachedTrieRouter';
  private readonly trie = new TrieRouter<T>();
  private readonly cache = new Map<string, Result<T>>();

  constructor(private readonly maxEntries = 512) {}

  add(method: string, path: string, handler: T): void {
    this.cache.clear();
    this.trie.add(method, path, handler);
  }

  match(method: string, path: string): Result<T> {
    const key = `${method} ${path}`;
    const cached = this.cache.get(key);
    if (cached) return cached;
    const result = this.trie.match(method, path);
    const [matches] = result as [[T, Record<string, string>][]];
    if (path.length <= 256 && matches.every(([, params]) => Object.keys(params).length === 0)) {
      if (this.cache.size >= this.maxEntries) this.cache.clear();
      this.cache.set(key, result);
    }
    return result;
  }
}

/**
 * The root app: request id, services, body limit, one error handler, one not-found body.
 * `servicesFor` returns the process-wide services on Node and per-request ones on Workers.
 */
export function createApp(servicesFor: (c: Context<AppEnv>) => Services | Promise<Services>) {
  const app = new OpenAPIHono<AppEnv>({ router: new CachedTrieRouter() });
  // This app's own registry of its routes, filled by buildApp once they are mounted.
  const registry = newAppRegistry();

  // A caller's X-Request-Id is kept when it is 1-128 word characters, '-' or '='; else a `req_...`
  // id is made. Either is echoed on the answer, in every log line and in error bodies.
  app.use('*', requestId({ limitLength: 128, generator: () => newId('request') }));
  // Every error answer says whether to send it again (`x-should-retry`, docs/errors.md): the error
  // handler sets it from the code's `retryable`; an error body written elsewhere (not-found, 405,
  // MCP's refusals) gets it here from the code it names.
  app.use('*', async (c, next) => {
    await next();
    if (c.res.status < 400 || c.res.headers.has(SHOULD_RETRY_HEADER)) return;
    let code: unknown;
    if (c.res.headers.get('content-type')?.includes('json'))
      code = (
        (await c.res
          .clone()
          .json()
          .catch(() => null)) as { code?: unknown } | null
      )?.code;
    const value = String(shouldRetryOf(c.res.status, code));
    try {
      c.res.headers.set(SHOULD_RETRY_HEADER, value);
    } catch {
      c.res = new Response(c.res.body, c.res); // immutable headers (a fetched answer passed through)
      c.res.headers.set(SHOULD_RETRY_HEADER, value);
    }
  });
  app.use('*', async (c, next) => {
    const services = await servicesFor(c);
    c.set('services', services);
    c.set('registry', registry);
    if (c.req.url.includes('%00')) rejectNulInUrl(c); // text Postgres cannot store (input-text.ts)
    const started = performance.now();
    await traceRequest(c, next);
    const ms = performance.now() - started;
    services.stats.record(ms);
    services.metrics?.request(operationOf(c), c.res.status, ms / 1000);
  });

  const limitBody = bodyLimit({
    maxSize: MAX_BODY_BYTES,
    onError: () => {
      throw new AppError('PAYLOAD_TOO_LARGE', `Request body exceeds ${MAX_BODY_BYTES} bytes`);
    },
  });
  // Only for methods that carry a body: touching the body of a GET makes the Node adapter build a
  // full Request object, which costs more than the rest of a cheap request. One middleware for the
  // body limit and the text check, so a cheap GET passes one layer, not two.
  app.use('*', (c, next) =>
    c.req.method === 'GET' || c.req.method === 'HEAD' || streamedBodyPaths.has(c.req.path)
      ? next()
      : limitBody(c, async () => {
          // /mcp carries JSON-RPC: each tool call is a request of its own that meets this check,
          // so a bad argument is answered as a tool result the model can read.
          if (c.req.path !== '/mcp') await rejectUnsafeBody(c);
          await next();
        }),
  );
  app.use('*', answerMethodNotAllowed(app));

  app.onError(async (err, c) => {
    const requestId = c.get('requestId') ?? newId('request');
    const services = c.get('services');
    if (isClientAbort(err, c.req.raw.signal)) {
      // Nobody reads this answer; the request is neither an outage nor an error response of the tenant.
      services?.log.info('request aborted by the client', { request_id: requestId, method: c.req.method, path: c.req.path, ...errorFields(err) });
      return new Response(null, { status: 499 });
    }
    const appError = toAppError(err, services, requestId);
    // Per-tenant error responses feed the audit summary (error_count, anomaly_count = 5xx) and
    // the server_errors anomaly window (shared/platform/data/anomalies.ts).
    const auth = c.get('auth');
    if (auth && services && appError.status >= 400) {
      try {
        await countErrorResponse(services, auth.tenantId, appError.status, services.clock.now(), requestId);
      } catch (countErr) {
        services.log.warn('could not count an error response', {
          request_id: requestId,
          status: appError.status,
          error: countErr instanceof Error ? countErr.message : String(countErr),
        });
      }
    }
    if (appError.status === 429) services?.metrics?.refused(limitOf(appError.extra.usage));
    // Every 429 and 503 says when to come back, also one whose error named no time.
    const retryAfter = appError.extra.retry_after ?? DEFAULT_RETRY_AFTER[appError.status];
    if (typeof retryAfter === 'number') c.header('Retry-After', String(retryAfter));
    c.header('X-Request-Id', requestId);
    c.header(SHOULD_RETRY_HEADER, String(shouldRetry(appError)));
    return c.json(errorBody(appError, requestId), appError.status);
  });

  app.notFound((c) => {
    const err = new AppError('NOT_FOUND', `No route for ${c.req.method} ${c.req.path}`);
    return c.json(errorBody(err, c.get('requestId') ?? newId('request')), 404);
  });

  return Object.assign(app, { registry });
}
