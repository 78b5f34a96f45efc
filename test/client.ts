/**
 * The one HTTP client of the test suites: in-process (`app.request`), inside workerd (the worker's
 * own fetch) and over the network (`wrangler dev`) alike. It sends a key, a JSON body or raw text,
 * reads the whole response (draining streamed exports; an event stream is closed after its headers)
 * and parses JSON when it is JSON. Runtime neutral: no Node imports, so the workerd tests import it too.
 */
import type { ErrorBody, Typed } from './route-types';

export type { BodyOf, ErrorBody, Typed } from './route-types';

/**
 * `body` is the declared success body of the route (test/route-types.ts), `unknown` for a path no
 * route declares; a test that reads a refusal names it: `engine.request<ErrorBody>(...)`.
 */
export interface TestResponse<T = unknown> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}

export interface RequestOptions {
  key?: string;
  /** Sent as JSON with `content-type: application/json`. */
  body?: unknown;
  /** Sent as it is (no content type unless `headers` sets one). */
  raw?: string;
  headers?: Record<string, string>;
  idempotencyKey?: string;
}

export type Send = (request: Request) => Response | Promise<Response>;
/**
 * Typed by method and path when both are literals (a template such as `/v1/memories/${id}` is one);
 * an explicit `T` names the body instead, for a refusal (`ErrorBody`) or a path built at run time.
 */
export type RequestFn = <T = never, M extends string = string, P extends string = string>(
  method: M,
  path: P,
  opts?: RequestOptions,
) => Promise<TestResponse<Typed<T, M, P>>>;

/**
 * The named escape for test files not yet converted to typed bodies: a file opts
 * out by declaring its client or engine with it (`TestEngine<'unchecked'>`), so what remains is a
 * grep away. Delete it, and this exception to the no-`any` rule, once no file names it.
 */
export type UncheckedBody = any;
export type UncheckedRequestFn = (method: string, path: string, opts?: RequestOptions) => Promise<TestResponse<UncheckedBody>>;

/**
 * `send` delivers one request; `base` is the origin paths are resolved against (an absolute URL is
 * sent as it is); `check`, when given, sees every response with the path it was sent to (the
 * in-process suite checks OpenAPI conformance there).
 */
export function testClient(send: Send, opts: { base?: string; check?: (method: string, path: string, res: TestResponse) => void } = {}): RequestFn {
  const base = opts.base ?? 'http://localhost';
  async function request(method: string, path: string, o: RequestOptions = {}): Promise<TestResponse> {
    const headers = new Headers(o.headers);
    if (o.key) headers.set('authorization', `Bearer ${o.key}`);
    if (o.idempotencyKey) headers.set('idempotency-key', o.idempotencyKey);
    let body = o.raw;
    if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      if (!headers.has('content-type')) headers.set('content-type', 'application/json');
    }
    const url = new URL(/^https?:\/\//.test(path) ? path : `${base}${path}`);
    const res = await send(new Request(url, { method, headers, body }));
    // A live event stream never ends: this client takes its status and headers and hangs up (the
    // stream then ends and gives its slot back). Tests that read a stream read `res.body` themselves.
    const text = res.headers.get('content-type')?.startsWith('text/event-stream') ? await hangUp(res) : await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      /* not JSON: keep the text */
    }
    const response = { status: res.status, body: parsed, headers: res.headers, text };
    opts.check?.(method, url.pathname, response);
    return response;
  }
  // The body's type is the route's declared one: the in-process suite checks each body against that
  // schema at run time (`check`, test/conformance.ts), which is what makes this cast hold.
  return request as RequestFn;
}

async function hangUp(res: Response): Promise<string> {
  await res.body?.cancel().catch(() => undefined);
  return '';
}

export const uniqueEmail = (label = 'user') => `${label}-${crypto.randomUUID().slice(0, 12)}@example.com`;

/**
 * A random documentation-range IPv6 address per signup, so the per-IP signup limit bites only where
 * a test wants it, even when Redis keeps windows across files and runs.
 */
export const freshIp = () => `2001:db8::${[...crypto.getRandomValues(new Uint16Array(4))].map((n) => n.toString(16)).join(':')}`;

/**
 * The body of a refusal, typed as the one error body: a request's `body` is typed as its route's
 * success body, so a test that reads an error names it here (the in-process suite's conformance
 * check holds every error body to that schema).
 */
export const errorOf = (res: TestResponse<unknown>): ErrorBody => res.body as ErrorBody;
