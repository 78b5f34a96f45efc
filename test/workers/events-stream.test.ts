import { env, exports } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { errorOf, testClient } from '../client';
import { SseReader } from '../sse';

/**
 * GET /v1/events/stream inside workerd (same setup as smoke.test.ts). A Worker's requests share no
 * I/O, so no commit wakes a stream here: it finds events by polling (EVENT_STREAM_POLL_MS, 1 s),
 * reading through its own request's Neon pool, which stays open for as long as the stream does.
 * Stream leases live in Redis (Upstash REST).
 */
const worker = (exports as unknown as { default: { fetch(req: Request): Promise<Response> } }).default;
const bindings = env as unknown as Record<string, string>;
const BASE = 'https://engram.test';
const call = testClient((req) => worker.fetch(req), { base: BASE });

async function open(key: string, headers: Record<string, string> = {}) {
  return worker.fetch(new Request(`${BASE}/v1/events/stream`, { headers: { authorization: `Bearer ${key}`, ...headers } }));
}

async function remember(key: string, observation: string) {
  const res = await call('POST', '/v1/memories', { key, body: { observation } });
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
}

describe('worker in workerd: live event stream', () => {
  let tenant: { tenantId: string; key: string };

  beforeAll(async () => {
    const res = await call('POST', '/admin/v1/tenants', {
      key: bindings.ADMIN_TOKEN,
      body: { email: `workerd-sse-${crypto.randomUUID().slice(0, 12)}@example.com`, tier: 'pro' },
    });
    expect(res.status, res.text).toBe(201);
    tenant = { tenantId: res.body.tenant_id, key: res.body.api_key };
  });

  it('delivers the events of writes as they commit, and resumes after Last-Event-ID', async () => {
    const res = await open(tenant.key);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const stream = new SseReader(res.body!);
    const first = await remember(tenant.key, 'Workers stream: the first memory.');
    const [a] = await stream.events(1, 10_000);
    expect(a).toMatchObject({ id: '1', event: 'memory.created' });
    expect(JSON.parse(a.data!)).toMatchObject({ type: 'memory.created', tenant_id: tenant.tenantId, data: { memory: { uuid: first } } });
    await stream.close();

    const missed = await remember(tenant.key, 'Workers stream: written while disconnected.');
    const again = await open(tenant.key, { 'last-event-id': '1' });
    expect(again.status).toBe(200);
    const resumed = new SseReader(again.body!);
    const [b] = await resumed.events(1, 10_000);
    expect(b.id).toBe('2');
    expect(JSON.parse(b.data!).data.memory.uuid).toBe(missed);
    await resumed.close();
  });

  it('holds at most 5 streams per key; one that disconnects gives its slot back', async () => {
    const streams = await Promise.all(Array.from({ length: 5 }, () => open(tenant.key)));
    expect(streams.map((s) => s.status)).toEqual([200, 200, 200, 200, 200]);
    const sixth = await call('GET', '/v1/events/stream', { key: tenant.key });
    expect(sixth.status, sixth.text).toBe(429);
    expect(errorOf(sixth).code).toBe('RATE_LIMITED');

    await streams[0].body!.cancel();
    let status = 0;
    const until = Date.now() + 10_000;
    while (Date.now() < until) {
      const res = await open(tenant.key);
      status = res.status;
      await res.body?.cancel();
      if (status === 200) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(200);
    await Promise.all(streams.slice(1).map((s) => s.body!.cancel()));
  });

  it('is refused to the Free tier with 403', async () => {
    const res = await call('POST', '/admin/v1/tenants', {
      key: bindings.ADMIN_TOKEN,
      body: { email: `workerd-sse-free-${crypto.randomUUID().slice(0, 12)}@example.com`, tier: 'free' },
    });
    const refused = await call('GET', '/v1/events/stream', { key: res.body.api_key });
    expect(refused.status).toBe(403);
    expect(errorOf(refused).code).toBe('FEATURE_NOT_AVAILABLE');
  });
});
