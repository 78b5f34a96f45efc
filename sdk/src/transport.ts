import { APIPromise } from './api-promise.js';
import { APIConnectionError, APIConnectionTimeoutError, APIUserAbortError, type EngramError, errorFromResponse, retryAfterSeconds } from './errors.js';
import { VERSION } from './generated/version.js';
import type { CallOptions } from './types.js';

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export type QueryValue = string | number | boolean | null | undefined | readonly (string | number)[];

export interface TransportOptions {
  /** The bearer token: a tenant's API key, or the operator's ADMIN_TOKEN for `admin`. */
  apiKey: string;
  baseUrl: string;
  fetch?: FetchLike;
  /**
   * Retries after the first attempt (default 2): when the answer says `x-should-retry: true`; without
   * that header, on 429, 503 and network errors. Never when it says `x-should-retry: false`.
   */
  maxRetries?: number;
  /** Per-attempt timeout in milliseconds (default 60 000). */
  timeoutMs?: number;
}

export interface RequestSpec extends CallOptions {
  query?: object;
  body?: unknown;
  /** Read the body as text instead of JSON (exports). */
  text?: boolean;
  /** A file sent as it is (`application/x-ndjson`), instead of a JSON `body` (imports). */
  file?: string | Blob | Uint8Array<ArrayBuffer>;
  /** Hand back the open response (event streams): no timeout once headers arrived, no body read. */
  raw?: boolean;
}

const BASE_DELAY_MS = 500;
const MAX_DELAY_MS = 8_000;
/** A Retry-After longer than this is not waited out: the error goes to the caller at once. */
const MAX_RETRY_AFTER_S = 60;
const RETRY_STATUSES = new Set([429, 503]);

/** Full jitter: a random wait between 0 and the exponential cap of this attempt. */
export function backoffMs(attempt: number): number {
  return Math.random() * Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** attempt);
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError(signal));
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(signal!));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function abortError(signal: AbortSignal): EngramError {
  return new APIUserAbortError({ status: 0, code: 'ABORTED', message: 'The call was aborted', cause: signal.reason });
}

type RuntimeGlobals = {
  navigator?: { userAgent?: string };
  Deno?: { version?: { deno?: string } };
  Bun?: { version?: string };
  process?: { versions?: { node?: string } };
  document?: unknown;
  window?: unknown;
};

/**
 * Who is calling: `engram-sdk/<version> (<runtime>; <runtime version>)`. Sent as `User-Agent`,
 * except in a browser, which does not let a page set it: there as `x-engram-client`.
 */
export function clientHeaders(g: RuntimeGlobals = globalThis as RuntimeGlobals): Record<string, string> {
  let runtime = 'unknown';
  let version = 'unknown';
  if (g.navigator?.userAgent === 'Cloudflare-Workers') runtime = 'workerd';
  else if (g.Deno?.version?.deno) [runtime, version] = ['deno', g.Deno.version.deno];
  else if (g.Bun?.version) [runtime, version] = ['bun', g.Bun.version];
  else if (g.process?.versions?.node) [runtime, version] = ['node', g.process.versions.node];
  else if (g.window !== undefined && g.document !== undefined) return { 'x-engram-client': `engram-sdk/${VERSION} (browser)` };
  return { 'user-agent': `engram-sdk/${VERSION} (${runtime}; ${version})` };
}

export function queryString(query: object | undefined): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query) as [string, QueryValue][]) {
    if (value === undefined || value === null) continue;
    params.set(name, Array.isArray(value) ? value.join(',') : String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

/**
 * The one place a call goes out: auth, JSON, `User-Agent`, `Idempotency-Key` on POST, a
 * per-attempt timeout and retries with exponential backoff and full jitter, honouring
 * `Retry-After`. An answer's `x-should-retry` decides whether it is retried (`true`: even a 5xx or
 * a POST, which keeps its Idempotency-Key so the server replays instead of doing the work twice;
 * `false`: never). Without the header: 429, 503, a keyed POST's 409 with `Idempotency-Status:
 * in-progress`, and network errors (a PATCH only on 429, which the API answers before any work).
 */
export class Transport {
  readonly baseUrl: string;
  readonly maxRetries: number;
  readonly timeoutMs: number;
  readonly #apiKey: string;
  readonly #fetch: FetchLike;

  constructor(opts: TransportOptions) {
    if (!opts.apiKey) throw new TypeError('engram: apiKey is required');
    if (!opts.baseUrl) throw new TypeError('engram: baseUrl is required');
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.maxRetries = opts.maxRetries ?? 2;
    this.timeoutMs = opts.timeoutMs ?? 60_000;
    this.#apiKey = opts.apiKey;
    // Called unbound, `fetch` throws "Illegal invocation" in browsers and workerd.
    this.#fetch = opts.fetch ?? ((input, init) => fetch(input, init));
  }

  /** One call: an APIPromise of the parsed answer (`.withResponse()` adds the raw one). */
  request<T>(method: HttpMethod, path: string, spec: RequestSpec = {}): APIPromise<T> {
    return new APIPromise<T>(this.send(method, path, spec), async (res) => {
      if (spec.raw) return res as T;
      if (res.status === 204) return undefined as T;
      if (spec.text) return (await res.text()) as T;
      const type = res.headers.get('content-type') ?? '';
      return (type.includes('json') ? await res.json() : await res.text()) as T;
    });
  }

  /** Sends with retries and answers the first 2xx response, or throws an EngramError. */
  async send(method: HttpMethod, path: string, spec: RequestSpec): Promise<Response> {
    const url = `${this.baseUrl}${path}${queryString(spec.query)}`;
    const headers: Record<string, string> = { ...clientHeaders(), accept: spec.raw ? 'text/event-stream' : 'application/json', ...spec.headers };
    headers.authorization = `Bearer ${this.#apiKey}`;
    let body: string | Blob | Uint8Array<ArrayBuffer> | undefined;
    if (spec.file !== undefined) {
      body = spec.file;
      headers['content-type'] = 'application/x-ndjson';
    } else if (spec.body !== undefined) {
      body = JSON.stringify(spec.body);
      headers['content-type'] = 'application/json';
    }
    const idempotencyKey = method === 'POST' ? (spec.idempotencyKey ?? crypto.randomUUID()) : undefined;
    if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
    const timeoutMs = spec.timeoutMs ?? this.timeoutMs;

    for (let attempt = 0; ; attempt++) {
      const last = attempt >= this.maxRetries;
      let res: Response;
      const timeout = new AbortController();
      const timer = setTimeout(() => timeout.abort(), timeoutMs);
      const signal = spec.signal ? anySignal([spec.signal, timeout.signal]) : timeout.signal;
      try {
        res = await this.#fetch(url, { method, headers, body, signal });
      } catch (err) {
        clearTimeout(timer);
        if (spec.signal?.aborted) throw abortError(spec.signal);
        const timedOut = timeout.signal.aborted;
        const retryable = method !== 'PATCH' && (method !== 'POST' || idempotencyKey !== undefined);
        if (last || !retryable) {
          throw new (timedOut ? APIConnectionTimeoutError : APIConnectionError)({
            status: 0,
            code: timedOut ? 'TIMEOUT' : 'NETWORK_ERROR',
            message: timedOut
              ? `No answer within ${timeoutMs} ms: ${method} ${path}`
              : `The request failed: ${method} ${path}: ${(err as Error)?.message ?? err}`,
            cause: err,
          });
        }
        await sleep(backoffMs(attempt), spec.signal);
        continue;
      }
      // The timeout bounds the wait for an answer's headers; a stream may then stay open.
      clearTimeout(timer);
      if (res.ok) return res;

      const wait = retryAfterSeconds(res.headers.get('retry-after'));
      // A keyed POST's 409 that says `Idempotency-Status: in-progress`: the first attempt with this
      // key is still running on the server; the retry gets its answer. Other 409s (a duplicate, a
      // decision asked for too early) are the caller's.
      const stillRunning = res.status === 409 && idempotencyKey !== undefined && res.headers.get('idempotency-status') === 'in-progress';
      // The server's say first (`x-should-retry`, from its error table: docs/errors.md); without it,
      // the rules above. A POST carries its Idempotency-Key on every attempt, so it happens once.
      const says = res.headers.get('x-should-retry');
      const fallback = stillRunning || (RETRY_STATUSES.has(res.status) && (method !== 'PATCH' || res.status === 429));
      const retryable = (says === 'true' ? true : says === 'false' ? false : fallback) && (wait === null || wait <= MAX_RETRY_AFTER_S);
      if (last || !retryable) throw await errorFromResponse(res);
      await res.body?.cancel().catch(() => undefined);
      await sleep(wait !== null ? wait * 1000 : backoffMs(attempt), spec.signal);
    }
  }
}

/** AbortSignal.any where the runtime has it; otherwise a controller that follows every signal. */
function anySignal(signals: AbortSignal[]): AbortSignal {
  const any = (AbortSignal as { any?: (s: AbortSignal[]) => AbortSignal }).any;
  if (any) return any(signals);
  const controller = new AbortController();
  for (const s of signals) {
    if (s.aborted) controller.abort(s.reason);
    else s.addEventListener('abort', () => controller.abort(s.reason), { once: true });
  }
  return controller.signal;
}
