import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signatureHeaders } from '../../functions/webhooks/delivery';
import {
  APIConnectionError,
  APIConnectionTimeoutError,
  AuthenticationError,
  BadRequestError,
  EngramError,
  type FetchLike,
  InternalServerError,
  NotFoundError,
  RateLimitError,
  unwrapWebhook,
  VERSION,
  WebhookVerificationError,
} from '../../sdk/src/index';
import { clientHeaders } from '../../sdk/src/transport';
import { createEngine, type Tenant, type TestEngine } from '../harness';
import { engineFetch, sdkFor } from './helpers';

/**
 * What the SDK adds around a call: error classes by status, retries by the server's
 * `x-should-retry`, `.withResponse()`, its User-Agent, and `webhooks.unwrap` of a delivery the
 * server signed. The real app answers; stand-in answers only where the app cannot be made to fail.
 */
let engine: TestEngine;
let tenant: Tenant;
beforeAll(async () => {
  engine = await createEngine();
  tenant = await engine.newTenant('pro');
});
afterAll(async () => {
  await engine?.close();
});

/** The app behind a fetch that answers the first `n` calls with `answer` and records every call. */
function failing(n: number, answer: () => Response) {
  const calls: { method: string; idempotencyKey: string | null; userAgent: string | null }[] = [];
  const real = engineFetch(engine);
  const fetch: FetchLike = async (url, init) => {
    const h = new Headers(init.headers);
    calls.push({ method: init.method ?? 'GET', idempotencyKey: h.get('idempotency-key'), userAgent: h.get('user-agent') });
    return calls.length <= n ? answer() : real(url, init);
  };
  return { fetch, calls };
}

const stand = (status: number, code: string, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ error: code, code, status, message: `stand-in ${code}`, request_id: 'req_standin' }), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });

describe('engram-sdk surface', () => {
  it('throws the error class of the status, each an EngramError with the typed code', async () => {
    const engram = sdkFor(engine, tenant.key);
    const notFound = await engram.memories.get('mem_00000000000000000000000000').catch((e: unknown) => e);
    expect(notFound).toBeInstanceOf(NotFoundError);
    expect(notFound).toBeInstanceOf(EngramError);
    expect(notFound).toMatchObject({ status: 404, code: 'NOT_FOUND', name: 'NotFoundError' });
    expect((notFound as NotFoundError).headers?.get('x-should-retry')).toBe('false');

    const invalid = await engram.memories.store({ observation: '' }).catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(BadRequestError);
    expect((invalid as BadRequestError).code).toBe('VALIDATION_ERROR');

    const unauthenticated = await sdkFor(engine, 'engram_not_a_key')
      .memories.list()
      .page()
      .catch((e: unknown) => e);
    expect(unauthenticated).toBeInstanceOf(AuthenticationError);

    const offline = await sdkFor(engine, tenant.key, {
      maxRetries: 0,
      fetch: () => Promise.reject(new TypeError('fetch failed')),
    })
      .system.status()
      .catch((e: unknown) => e);
    expect(offline).toBeInstanceOf(APIConnectionError);
    expect(offline).not.toBeInstanceOf(APIConnectionTimeoutError);
    expect(offline).toMatchObject({ status: 0, code: 'NETWORK_ERROR' });
  });

  it('retries what the server says to retry (x-should-retry: true, a 500 to a POST) with the same Idempotency-Key', async () => {
    const { fetch, calls } = failing(1, () => stand(500, 'INTERNAL_ERROR', { 'x-should-retry': 'true' }));
    const stored = await sdkFor(engine, tenant.key, { fetch }).memories.store({ observation: 'kept after a 500' });
    expect(stored.id).toBeTypeOf('string');
    expect(calls.length).toBe(2);
    expect(calls[1]!.idempotencyKey).toBe(calls[0]!.idempotencyKey);
  });

  it('never retries what the server says not to (x-should-retry: false, even a 503), and without the header keeps its own rules', async () => {
    const said = failing(5, () => stand(503, 'SERVICE_UNAVAILABLE', { 'x-should-retry': 'false' }));
    const err = await sdkFor(engine, tenant.key, { fetch: said.fetch })
      .system.status()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InternalServerError);
    expect(said.calls.length).toBe(1);

    const unsaid500 = failing(5, () => stand(500, 'INTERNAL_ERROR'));
    await expect(sdkFor(engine, tenant.key, { fetch: unsaid500.fetch }).system.status()).rejects.toBeInstanceOf(InternalServerError);
    expect(unsaid500.calls.length).toBe(1); // no header: a 500 is not retried (the rules before x-should-retry)

    const limited = failing(1, () => stand(429, 'RATE_LIMITED', { 'retry-after': '0' }));
    await sdkFor(engine, tenant.key, { fetch: limited.fetch }).system.status();
    expect(limited.calls.length).toBe(2);

    const exhausted = failing(5, () => stand(429, 'RATE_LIMITED', { 'retry-after': '0', 'x-should-retry': 'true' }));
    await expect(sdkFor(engine, tenant.key, { fetch: exhausted.fetch, maxRetries: 1 }).system.status()).rejects.toBeInstanceOf(RateLimitError);
    expect(exhausted.calls.length).toBe(2);
  });

  it('gives the raw answer with .withResponse() and .asResponse(), also for one page of a list', async () => {
    const engram = sdkFor(engine, tenant.key);
    const { data, response, requestId } = await engram.memories.store({ observation: 'with its response' }).withResponse();
    expect(data.id).toBeTypeOf('string');
    expect(response.status).toBe(201);
    expect(requestId).toMatch(/^req_/);
    expect(requestId).toBe(response.headers.get('x-request-id'));

    const raw = await engram.memories.get(data.id).asResponse();
    expect(raw.status).toBe(200);
    expect(JSON.stringify(await raw.json())).toContain(data.id);

    const page = await engram.memories.list({ limit: 1 }).page().withResponse();
    expect(page.data.memories.length).toBe(1);
    expect(page.response.headers.get('content-type')).toContain('json');
    expect(JSON.stringify(await engram.memories.get(data.id))).toContain(data.id); // plain await: still the result
  });

  it('sends User-Agent engram-sdk/<version> (<runtime>; <version>), the version of sdk/package.json', async () => {
    const pkg = JSON.parse(readFileSync(new URL('../../sdk/package.json', import.meta.url), 'utf8')) as { version: string };
    expect(VERSION).toBe(pkg.version);
    const { fetch, calls } = failing(0, () => new Response());
    await sdkFor(engine, tenant.key, { fetch }).system.status();
    expect(calls[0]!.userAgent).toBe(`engram-sdk/${pkg.version} (node; ${process.versions.node})`);
    expect(clientHeaders({ navigator: { userAgent: 'Cloudflare-Workers' } })).toEqual({ 'user-agent': `engram-sdk/${VERSION} (workerd; unknown)` });
    expect(clientHeaders({ Deno: { version: { deno: '2.1.0' } } })).toEqual({ 'user-agent': `engram-sdk/${VERSION} (deno; 2.1.0)` });
    expect(clientHeaders({ Bun: { version: '1.2.0' }, process: { versions: { node: '22.0.0' } } })).toEqual({
      'user-agent': `engram-sdk/${VERSION} (bun; 1.2.0)`,
    });
    expect(clientHeaders({ window: {}, document: {} })).toEqual({ 'x-engram-client': `engram-sdk/${VERSION} (browser)` });
  });

  it('unwraps a delivery the server signed into its event, and refuses one that was changed or signed otherwise', async () => {
    const engram = sdkFor(engine, tenant.key);
    const hook = await engram.webhooks.create({ url: 'https://hooks.example.com/engram', events: ['memory.created'] });
    const event = {
      id: 'evt_sdk_unwrap',
      type: 'memory.created',
      created_at: new Date().toISOString(),
      tenant_id: tenant.tenantId,
      data: { memory: { id: 'mem_x' } },
    };
    const body = JSON.stringify(event);
    const headers = signatureHeaders([hook.secret], event.id, new Date(), body);

    const unwrapped = engram.webhooks.unwrap(body, new Headers(headers), hook.secret);
    expect(unwrapped).toEqual(event);
    expect(unwrapped.type).toBe('memory.created');
    expect(unwrapWebhook(new TextEncoder().encode(body), headers, hook.secret)).toEqual(event);

    expect(() => engram.webhooks.unwrap(`${body} `, headers, hook.secret)).toThrow(WebhookVerificationError);
    const other = await engram.webhooks.create({ url: 'https://hooks.example.com/other', events: ['memory.created'] });
    expect(() => unwrapWebhook(body, headers, other.secret)).toThrow(WebhookVerificationError);
    const old = signatureHeaders([hook.secret], event.id, new Date(Date.now() - 3600_000), body);
    expect(() => unwrapWebhook(body, old, hook.secret)).toThrow(WebhookVerificationError);
  });
});
