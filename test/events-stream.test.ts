import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emitEvent, eventBodySql } from '../shared/jobs/events';
import { conformanceChecker } from './conformance';
import { createEngine, type Tenant, type TestEngine } from './harness';
import { SseReader } from './sse';

/**
 * GET /v1/events/stream (docs/architecture.md#live-events) through the HTTP API: events of writes arrive as
 * they commit with `id:` their number and `data:` the raw webhook body; `types` filters;
 * Last-Event-ID resumes with exactly the missed ones; other tenants' events never show; heartbeats;
 * at most EVENT_STREAMS_PER_KEY open streams per key, given back on disconnect or when they lapse.
 *
 * `engine` polls only once a minute and beats every 100 ms, so an event that arrives at once was
 * woken by the commit (the event bus), not found by a poll. `polling` has no short heartbeat and
 * polls every 100 ms: the path for events other instances commit, and for lapsed leases.
 */
let engine: TestEngine;
let polling: TestEngine;
beforeAll(async () => {
  [engine, polling] = await Promise.all([
    createEngine({ env: { EVENT_STREAM_POLL_MS: '60000', EVENT_STREAM_HEARTBEAT_MS: '100' } }),
    createEngine({ env: { EVENT_STREAM_POLL_MS: '100' } }),
  ]);
});
afterAll(async () => {
  await Promise.all([engine?.close(), polling?.close()]);
});

interface Opened {
  status: number;
  headers: Headers;
  body: any;
  stream: SseReader | null;
}

/** Opens a stream the way a client does and checks the answer against the route's OpenAPI. */
async function open(e: TestEngine, key: string, opts: { query?: string; lastEventId?: string } = {}): Promise<Opened> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (opts.lastEventId !== undefined) headers['last-event-id'] = opts.lastEventId;
  const path = `/v1/events/stream${opts.query ? `?${opts.query}` : ''}`;
  const res = await e.app.request(new Request(`http://localhost${path}`, { headers }));
  const contentType = res.headers.get('content-type');
  if (contentType?.startsWith('text/event-stream')) {
    conformanceChecker(e.app)('GET', path, res.status, contentType, null);
    return { status: res.status, headers: res.headers, body: null, stream: new SseReader(res.body!) };
  }
  const body = await res.json();
  conformanceChecker(e.app)('GET', path, res.status, contentType, body);
  return { status: res.status, headers: res.headers, body, stream: null };
}

const opened: SseReader[] = [];
async function stream(e: TestEngine, key: string, opts: { query?: string; lastEventId?: string } = {}): Promise<SseReader> {
  const res = await open(e, key, opts);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  opened.push(res.stream!);
  return res.stream!;
}
afterAll(async () => {
  await Promise.all(opened.map((s) => s.close()));
});

const remember = async (e: TestEngine, t: Tenant, observation: string) => {
  const res = await e.request('POST', '/v1/memories', { key: t.key, body: { observation } });
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
};

async function storedEvents(e: TestEngine, tenantId: string) {
  const res = await e.sql<{ seq: string | number; type: string; payload: Record<string, unknown> }>(
    sql`SELECT e.seq, e.type, ${eventBodySql('e')} AS payload FROM events e WHERE e.tenant_id = ${tenantId} AND e.seq IS NOT NULL ORDER BY e.seq`,
  );
  return res.map((r) => ({ seq: String(r.seq), type: r.type, payload: r.payload }));
}

/** Until `fn` stops throwing (something done after a disconnect, which is asynchronous). */
async function eventually<T>(fn: () => Promise<T>, ms = 5_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > until) throw err;
      await new Promise((r) => setTimeout(r, 25));
    }
  }
}

describe('GET /v1/events/stream', () => {
  it('sends each event as its write commits: id = the event number, event = its type, data = the raw webhook body; only events after the stream opened', async () => {
    const t = await engine.newTenant('pro');
    await remember(engine, t, 'Written before the stream opened.');
    const s = await stream(engine, t.key);
    const first = await remember(engine, t, 'The user prefers invoices in EUR.');
    const [a] = await s.events(1);
    const second = await remember(engine, t, 'The user lives in Lisbon.');
    const [b] = await s.events(1);

    const stored = await storedEvents(engine, t.tenantId);
    expect(stored.map((e) => e.seq)).toEqual(['1', '2', '3']);
    expect([a, b].map((m) => ({ id: m.id, event: m.event, data: JSON.parse(m.data!) }))).toEqual([
      { id: '2', event: 'memory.created', data: stored[1].payload },
      { id: '3', event: 'memory.created', data: stored[2].payload },
    ]);
    const data = JSON.parse(a.data!);
    expect(Object.keys(data)).toEqual(['id', 'type', 'created_at', 'tenant_id', 'data']);
    expect(data).toMatchObject({ type: 'memory.created', tenant_id: t.tenantId, created_at: engine.clock.now().toISOString() });
    expect(data.id).toMatch(/^evt_/);
    expect(data.data.memory.uuid).toBe(first);
    expect(JSON.parse(b.data!).data.memory.uuid).toBe(second);
  });

  it('a memory.created event names its memory and is sent with the body it was stored with before (migrations/0052)', async () => {
    const t = await engine.newTenant('pro');
    const s = await stream(engine, t.key);
    const id = await remember(engine, t, 'The user prefers invoices in EUR.');
    const [sent] = await s.events(1);
    const [row] = await engine.sql<{ id: string; type: string; created_at: Date; payload: unknown; memory_id: string }>(
      sql`SELECT id, type, created_at, payload, memory_id FROM events WHERE tenant_id = ${t.tenantId} AND type = 'memory.created'`,
    );
    expect(row).toMatchObject({ payload: {}, memory_id: id.slice('urn:uuid:'.length) });
    const [create] = await engine.sql<{ after: Record<string, unknown> }>(
      sql`SELECT memory_event_after(kind, after, memory_id, tenant_id, at) AS after FROM memory_events WHERE tenant_id = ${t.tenantId} AND memory_id = ${row.memory_id}::uuid AND kind = 'create'`,
    );
    // The body as it was stored whole: the envelope and the create event's snapshot.
    const whole = { id: row.id, type: row.type, created_at: new Date(row.created_at).toISOString(), tenant_id: t.tenantId, data: { memory: create.after } };
    expect(sent.data).toBe(JSON.stringify(whole));
    // A row stored whole (written before 0052) is sent as it is: the same text.
    await engine.sql(sql`UPDATE events SET payload = ${JSON.stringify(whole)}::jsonb, memory_id = NULL WHERE id = ${row.id}`);
    const again = await stream(engine, t.key, { lastEventId: '0' });
    const [resent] = await again.events(1);
    expect(resent.data).toBe(sent.data);
  });

  it('answers as an event stream: no caching, the request id', async () => {
    const t = await engine.newTenant('enterprise');
    const res = await open(engine, t.key);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('x-request-id')).toMatch(/^req_/);
    await res.stream!.close();
  });

  it('HEAD answers as GET would begin, and opens no stream', async () => {
    const t = await engine.newTenant('pro');
    const bus = engine.node.services.eventBus!;
    const before = bus.size;
    for (let i = 0; i < 7; i++) {
      const res = await engine.request('HEAD', '/v1/events/stream', { key: t.key });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/event-stream');
    }
    expect(bus.size).toBe(before);
    expect((await engine.request('HEAD', '/v1/events/stream', { key: t.key, headers: { 'last-event-id': '3' } })).status).toBe(400);
    const streams = await Promise.all(Array.from({ length: 5 }, () => stream(engine, t.key)));
    await Promise.all(streams.map((s) => s.close()));
  });

  it('types= sends only those types, and the ids stay the event numbers', async () => {
    const t = await engine.newTenant('pro');
    const s = await stream(engine, t.key, { query: 'types=memory.deleted,rollback.completed' });
    const id = await remember(engine, t, 'A memory that will be deleted.');
    expect((await engine.request('DELETE', `/v1/memories/${id}`, { key: t.key })).status).toBe(200);
    const [m] = await s.events(1);
    expect(m).toMatchObject({ id: '2', event: 'memory.deleted' });
    expect(JSON.parse(m.data!).data.memory_id).toBe(id);
    expect(await s.quiet(150)).toEqual([]);
  });

  it('resumes after Last-Event-ID with exactly the events missed, then goes on live', async () => {
    const t = await engine.newTenant('pro');
    const s = await stream(engine, t.key);
    for (const n of [1, 2, 3]) await remember(engine, t, `Memory number ${n} before the disconnect.`);
    const seen = await s.events(3);
    expect(seen.map((m) => m.id)).toEqual(['1', '2', '3']);
    await s.close();

    const missed = [await remember(engine, t, 'Written while disconnected, first.'), await remember(engine, t, 'Written while disconnected, second.')];
    const again = await stream(engine, t.key, { lastEventId: seen[1].id });
    const resumed = await again.events(3);
    expect(resumed.map((m) => m.id)).toEqual(['3', '4', '5']);
    expect(resumed.slice(1).map((m) => JSON.parse(m.data!).data.memory.uuid)).toEqual(missed);
    const live = await remember(engine, t, 'Written after the reconnect.');
    const [next] = await again.events(1);
    expect(next.id).toBe('6');
    expect(JSON.parse(next.data!).data.memory.uuid).toBe(live);

    // For clients that cannot set headers; the header wins when both come (a reconnecting EventSource).
    const byQuery = await stream(engine, t.key, { query: 'last_event_id=4' });
    expect((await byQuery.events(2)).map((m) => m.id)).toEqual(['5', '6']);
    const both = await stream(engine, t.key, { query: 'last_event_id=1', lastEventId: '5' });
    expect((await both.events(1)).map((m) => m.id)).toEqual(['6']);
    expect(await both.quiet(100)).toEqual([]);
    await Promise.all([again.close(), byQuery.close(), both.close()]);
  });

  it("never sends another tenant's events", async () => {
    const [mine, theirs] = await Promise.all([engine.newTenant('pro'), engine.newTenant('pro')]);
    const s = await stream(engine, mine.key);
    await remember(engine, theirs, 'Somebody else’s memory.');
    await remember(engine, theirs, 'Somebody else’s second memory.');
    const own = await remember(engine, mine, 'My own memory.');
    const [m] = await s.events(1);
    expect(JSON.parse(m.data!)).toMatchObject({ tenant_id: mine.tenantId, data: { memory: { uuid: own } } });
    expect(m.id).toBe('1');
    // Resuming from before the other tenant's numbers does not reach them either.
    const resumed = await stream(engine, mine.key, { lastEventId: '0' });
    expect((await resumed.events(1)).map((x) => JSON.parse(x.data!).tenant_id)).toEqual([mine.tenantId]);
    expect(await resumed.quiet(100)).toEqual([]);
  });

  it('sends a `: keepalive` comment every heartbeat', async () => {
    const t = await engine.newTenant('pro');
    const s = await stream(engine, t.key);
    const beats = [await s.next({ comments: true, timeoutMs: 2_000 }), await s.next({ comments: true, timeoutMs: 2_000 })];
    expect(beats.map((b) => b?.comments)).toEqual([['keepalive'], ['keepalive']]);
    expect(beats.every((b) => b?.data === undefined)).toBe(true);
  });

  it('refuses bad input with 400 naming the field', async () => {
    const t = await engine.newTenant('pro');
    const cases: [Parameters<typeof open>[2], string][] = [
      [{ query: 'types=memory.created,memory.exploded' }, 'types'],
      [{ query: 'types=webhook.test' }, 'types'],
      [{ lastEventId: 'abc' }, 'last-event-id'],
      [{ lastEventId: '-1' }, 'last-event-id'],
      [{ lastEventId: '1.5' }, 'last-event-id'],
      [{ query: 'last_event_id=x' }, 'last_event_id'],
      // A number the tenant has not reached names no event ever sent.
      [{ lastEventId: '7' }, 'last-event-id'],
      [{ query: 'last_event_id=7' }, 'last_event_id'],
    ];
    for (const [opts, field] of cases) {
      const res = await open(engine, t.key, opts);
      expect(res.status, JSON.stringify(opts)).toBe(400);
      expect(res.body.code).toBe('VALIDATION_ERROR');
      expect(res.body.details.map((d: { path: string }) => d.path)).toEqual([field]);
    }
  });

  it('is a Pro+ feature: Free and Starter get 403 FEATURE_NOT_AVAILABLE', async () => {
    for (const tier of ['free', 'starter'] as const) {
      const t = await engine.newTenant(tier);
      const res = await open(engine, t.key);
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ code: 'FEATURE_NOT_AVAILABLE', feature: 'webhooks', required_tier: 'pro', current_tier: tier });
    }
  });

  it('allows 5 open streams per key: the 6th is 429 RATE_LIMITED; a stream that disconnects gives its slot back', async () => {
    const t = await engine.newTenant('pro');
    const streams = await Promise.all(Array.from({ length: 5 }, () => stream(engine, t.key)));
    const sixth = await open(engine, t.key);
    expect(sixth.status).toBe(429);
    expect(sixth.body.code).toBe('RATE_LIMITED');
    expect(sixth.body.message).toMatch(/At most 5 event streams may be open at once per API key/);
    expect(sixth.headers.get('retry-after')).toBe('1');

    // Another key of the same account has its own 5.
    const rotated = await engine.request('POST', '/v1/keys/rotate', { key: t.key });
    expect(rotated.status).toBe(200);
    const other = await stream(engine, rotated.body.new_key);

    await streams[0].close();
    const replacement = await eventually(async () => {
      const res = await open(engine, t.key);
      if (res.status !== 200) throw new Error(`still ${res.status}`);
      return res.stream!;
    });
    expect((await open(engine, t.key)).status).toBe(429);
    await Promise.all([...streams, replacement, other].map((s) => s.close()));
  });

  it('ends when its key is revoked (checked at each heartbeat)', async () => {
    const t = await engine.newTenant('pro');
    const s = await stream(engine, t.key);
    const rotated = await engine.request('POST', '/v1/keys/rotate', { key: t.key });
    const revoked = await engine.request('POST', '/v1/keys/revoke', { key: rotated.body.new_key, body: { key_id: t.keyId } });
    expect(revoked.status, revoked.text).toBe(200);
    let last = await s.next({ comments: true, timeoutMs: 2_000 });
    while (last && last.comments[0] === 'keepalive') last = await s.next({ comments: true, timeoutMs: 2_000 });
    expect(last?.comments).toEqual(['stream ended: key revoked']);
    expect(await s.next({ comments: true, timeoutMs: 2_000 })).toBeNull();
  });

  it('leaves nothing behind once its clients are gone: no subscription, no lease', async () => {
    const t = await engine.newTenant('pro');
    const bus = engine.node.services.eventBus!;
    const before = bus.size;
    const streams = await Promise.all([stream(engine, t.key), stream(engine, t.key)]);
    expect(bus.size).toBe(before + 2);
    await Promise.all(streams.map((s) => s.close()));
    await eventually(async () => {
      const leases = await engine.sql<{ n: number }>(sql`SELECT count(*)::int AS n FROM event_stream_leases WHERE tenant_id = ${t.tenantId}`);
      // Redis (integration run) holds them there instead; the table stays empty then.
      expect(leases[0].n).toBe(0);
      expect(bus.size).toBe(before);
    });
  });
});

describe('GET /v1/events/stream without a wake-up (other instances, Workers)', () => {
  it('finds events committed where its event bus cannot hear them, by polling', async () => {
    const t = await polling.newTenant('pro');
    const s = await stream(polling, t.key);
    // As another instance commits an event: in the table, with no wake-up in this process.
    await polling.node.services.db.transaction((tx) =>
      emitEvent(tx, { tenantId: t.tenantId, type: 'rollback.completed', data: { memories_reverted: 0 }, at: polling.clock.now() }),
    );
    const [m] = await s.events(1, 3_000);
    expect(m).toMatchObject({ id: '1', event: 'rollback.completed' });
    expect(JSON.parse(m.data!).data).toEqual({ memories_reverted: 0 });
  });

  it('sends nothing more once its key is revoked, long before the next heartbeat', async () => {
    const t = await polling.newTenant('pro');
    const rotated = await polling.request('POST', '/v1/keys/rotate', { key: t.key });
    const s = await stream(polling, t.key);
    await remember(polling, t, 'Delivered while the key is good.');
    expect(await s.events(1, 3_000)).toHaveLength(1);
    expect((await polling.request('POST', '/v1/keys/revoke', { key: rotated.body.new_key, body: { key_id: t.keyId } })).status).toBe(200);
    await remember(polling, { ...t, key: rotated.body.new_key }, 'Written after the revocation.');
    const last = await s.next({ comments: true, timeoutMs: 3_000 });
    expect(last?.comments).toEqual(['stream ended: key revoked']);
    expect(last?.data ?? null).toBeNull();
    expect(await s.next({ comments: true, timeoutMs: 2_000 })).toBeNull();
  });

  it('counts the leases of streams whose instance went away only until they lapse (four heartbeats)', async () => {
    const t = await polling.newTenant('pro');
    // Five streams that stop renewing (the heartbeat is 15 s here, and the clock stands still).
    await Promise.all(Array.from({ length: 5 }, () => stream(polling, t.key)));
    expect((await open(polling, t.key)).status).toBe(429);
    polling.clock.advance(59_000);
    expect((await open(polling, t.key)).status).toBe(429);
    polling.clock.advance(1_000);
    const res = await open(polling, t.key);
    expect(res.status).toBe(200);
    await res.stream!.close();
  });

  it('ends every open stream when the process shuts down', async () => {
    const own = await createEngine();
    const t = await own.newTenant('pro');
    const s = await stream(own, t.key);
    await own.close();
    expect(await s.next({ timeoutMs: 2_000 })).toBeNull();
    expect(own.node.services.eventBus!.size).toBe(0);
  });
});
