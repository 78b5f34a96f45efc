import { type SQL, sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../shared/platform/data/log';
import { createEngine, type Tenant, type TestEngine } from './harness';

/**
 * docs/architecture.md#anomalies: `anomaly.bulk_delete`, `anomaly.rapid_writes` and `anomaly.server_errors`,
 * each per tenant in fixed 60-second windows, emitted once when a window reaches its threshold
 * (50 deletes, 500 creates/updates, 10 responses ≥ 500), audited, and counted by the audit summary.
 */
const MINUTE = 60_000;

async function query<T = any>(engine: TestEngine, q: SQL): Promise<T[]> {
  return await engine.sql<T>(q);
}

/** The tenant's anomaly events as stored (and as a webhook receives them), in seq order. */
const anomalies = (engine: TestEngine, t: Tenant) =>
  query<{ type: string; payload: { id: string; type: string; tenant_id: string; created_at: string; data: Record<string, unknown> } }>(
    engine,
    sql`SELECT type, payload FROM events WHERE tenant_id = ${t.tenantId} AND type LIKE 'anomaly.%' ORDER BY seq`,
  );

const windowOf = (now: Date) => {
  const start = Math.floor(now.getTime() / MINUTE) * MINUTE;
  return { window_start: new Date(start).toISOString(), window_end: new Date(start + MINUTE).toISOString(), window_seconds: 60 };
};

/** `n` requests made by `make(i)`, `width` at a time. */
async function inBatches<T>(n: number, width: number, make: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < n; i += width) out.push(...(await Promise.all(Array.from({ length: Math.min(width, n - i) }, (_, j) => make(i + j)))));
  return out;
}

describe('memory anomalies', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await createEngine();
  });
  afterAll(() => engine.close());

  const storeMany = async (t: Tenant, n: number, prefix: string): Promise<string[]> => {
    const made = await inBatches(n, 25, (i) => engine.request('POST', '/v1/memories', { key: t.key, body: { observation: `${prefix} ${i}` } }));
    for (const res of made) expect(res.status).toBe(201);
    return made.map((r) => r.body.id as string);
  };
  /** `n` memories through the batch endpoint, 100 a request: each counts as one create, as a single store does. */
  const storeBatched = async (t: Tenant, n: number, prefix: string): Promise<string[]> => {
    const ids: string[] = [];
    for (let i = 0; i < n; i += 100) {
      const memories = Array.from({ length: Math.min(100, n - i) }, (_, j) => ({ observation: `${prefix} ${i + j}` }));
      const res = await engine.request('POST', '/v1/memories/batch', { key: t.key, body: { memories } });
      expect(res.status).toBe(200);
      for (const r of res.body.results) {
        expect(r.status).toBe(201);
        ids.push(r.memory!.id);
      }
    }
    return ids;
  };
  const remove = (t: Tenant, id: string) => engine.request('DELETE', `/v1/memories/${id}`, { key: t.key });

  it('bulk_delete: the 50th delete in a window emits one event, audited; the next window can emit again', async () => {
    const t = await engine.newTenant('pro');
    const other = await engine.newTenant('pro');
    const ids = await storeMany(t, 110, 'doomed');
    const theirs = await storeMany(other, 49, 'kept');
    engine.clock.advance(MINUTE);
    const first = windowOf(engine.clock.now());

    for (const id of ids.slice(0, 49)) expect((await remove(t, id)).status).toBe(200);
    for (const id of theirs) expect((await remove(other, id)).status).toBe(200);
    expect(await anomalies(engine, t)).toEqual([]);

    const crossing = await remove(t, ids[49]);
    expect(crossing.status).toBe(200);
    let events = await anomalies(engine, t);
    expect(events).toHaveLength(1);
    expect(events[0].type).toBe('anomaly.bulk_delete');
    expect(events[0].payload).toMatchObject({ type: 'anomaly.bulk_delete', tenant_id: t.tenantId, created_at: engine.clock.now().toISOString() });
    expect(events[0].payload.data).toEqual({ ...first, count: 50, threshold: 50, request_id: crossing.headers.get('x-request-id') });

    // Past the threshold, the same window stays quiet.
    for (const id of ids.slice(50, 60)) expect((await remove(t, id)).status).toBe(200);
    expect(await anomalies(engine, t)).toHaveLength(1);
    // Another tenant's 49 deletes in the same window are its own, below its threshold.
    expect(await anomalies(engine, other)).toEqual([]);

    engine.clock.advance(MINUTE);
    for (const id of ids.slice(60, 110)) expect((await remove(t, id)).status).toBe(200);
    events = await anomalies(engine, t);
    expect(events.map((e) => e.type)).toEqual(['anomaly.bulk_delete', 'anomaly.bulk_delete']);
    expect(events[1].payload.data).toMatchObject({ ...windowOf(engine.clock.now()), count: 50, threshold: 50 });

    // Each is an audit entry of the tenant's chain, by `system`, about the tenant.
    const audit = await engine.request('GET', '/v1/audit?limit=1000', { key: t.key });
    const entries = audit.body.entries
      .filter((e: { operation: string }) => e.operation === 'anomaly.bulk_delete')
      .sort((a: { seq: number }, b: { seq: number }) => a.seq - b.seq);
    expect(entries).toHaveLength(2);
    expect(entries[0]).toMatchObject({ resource_type: 'tenant', resource_id: t.tenantId, actor: 'system', request_id: crossing.headers.get('x-request-id') });
    expect(entries[0].metadata).toEqual(events[0].payload.data);
    expect((await engine.request('GET', '/v1/audit/verify', { key: t.key })).body.valid).toBe(true);

    const summary = await engine.request('GET', '/v1/audit/summary', { key: t.key });
    expect(summary.body.anomalies).toEqual({ bulk_delete: 2, rapid_writes: 0, server_errors: 0 });
    expect(summary.body.by_operation['anomaly.bulk_delete']).toBe(2);
    expect((await engine.request('GET', '/v1/audit/summary', { key: other.key })).body.anomalies).toEqual({
      bulk_delete: 0,
      rapid_writes: 0,
      server_errors: 0,
    });
  });

  it('bulk_delete under concurrency: 80 simultaneous deletes give exactly one event, at the 50th', async () => {
    const t = await engine.newTenant('pro');
    const ids = await storeMany(t, 80, 'raced');
    engine.clock.advance(MINUTE);
    const results = await Promise.all(ids.map((id) => remove(t, id)));
    expect(results.map((r) => r.status)).toEqual(ids.map(() => 200));
    const events = await anomalies(engine, t);
    expect(events).toHaveLength(1);
    expect(events[0].payload.data).toMatchObject({ ...windowOf(engine.clock.now()), count: 50, threshold: 50 });
  });

  it('a rollback that removes many memories is not a bulk delete', async () => {
    const t = await engine.newTenant('pro');
    const before = engine.clock.now().toISOString();
    engine.clock.advance(1_000);
    await storeMany(t, 60, 'undone');
    engine.clock.advance(MINUTE);
    const res = await engine.request('POST', '/v1/rollback', { key: t.key, body: { target: before } });
    expect(res.status).toBe(200);
    expect(res.body.operations_undone).toBe(60);
    expect(await anomalies(engine, t)).toEqual([]);
  });

  it('rapid_writes: creates and updates count together; the 500th emits once; a concurrent burst in the next window emits once', async () => {
    const t = await engine.newTenant('pro');
    const other = await engine.newTenant('pro');
    const ids = await storeBatched(t, 300, 'busy');
    await storeBatched(other, 100, 'calm');
    const patch = (id: string, importance: number) => engine.request('PATCH', `/v1/memories/${id}`, { key: t.key, body: { importance } });
    for (const res of await inBatches(199, 25, (i) => patch(ids[i], 7))) expect(res.status).toBe(200);
    expect(await anomalies(engine, t)).toEqual([]);
    const crossing = await patch(ids[199], 7);
    expect(crossing.status).toBe(200);
    let events = await anomalies(engine, t);
    expect(events.map((e) => e.type)).toEqual(['anomaly.rapid_writes']);
    expect(events[0].payload.data).toEqual({ ...windowOf(engine.clock.now()), count: 500, threshold: 500, request_id: crossing.headers.get('x-request-id') });
    for (const res of await inBatches(20, 20, (i) => patch(ids[200 + i], 7))) expect(res.status).toBe(200);
    expect(await anomalies(engine, t)).toHaveLength(1);
    expect(await anomalies(engine, other)).toEqual([]);

    // Next window: 520 writes at once (300 updates and 220 creates).
    engine.clock.advance(MINUTE);
    const burst = await Promise.all([
      ...ids.map((id) => patch(id, 3)),
      ...Array.from({ length: 220 }, (_, i) => engine.request('POST', '/v1/memories', { key: t.key, body: { observation: `burst ${i}` } })),
    ]);
    expect(burst.filter((r) => r.status >= 300)).toEqual([]);
    events = await anomalies(engine, t);
    expect(events.map((e) => e.type)).toEqual(['anomaly.rapid_writes', 'anomaly.rapid_writes']);
    // Stores that commit together still report the count the one that reached the threshold brought, and its request.
    expect(events[1].payload.data).toMatchObject({ ...windowOf(engine.clock.now()), count: 500, threshold: 500 });
    expect(burst.map((r) => r.headers.get('x-request-id'))).toContain(events[1].payload.data.request_id);
    expect((await engine.request('GET', '/v1/audit/summary', { key: t.key })).body.anomalies).toEqual({ bulk_delete: 0, rapid_writes: 2, server_errors: 0 });
  }, 120_000); // over 1,000 writes by design (the threshold is 500): a loaded CI machine took more than 30 s

  it('rapid_writes in one batch request: the event names the count the memory that reached the threshold brought', async () => {
    const t = await engine.newTenant('pro');
    const start = new Date(Math.floor(engine.clock.now().getTime() / MINUTE) * MINUTE);
    await engine.node.services.db.execute(sql`
      INSERT INTO usage_counters (tenant_id, metric, bucket, value, expires_at)
      VALUES (${t.tenantId}, 'anomaly:rapid_writes', ${start.toISOString()}, 480, ${new Date(start.getTime() + 2 * MINUTE).toISOString()})`);
    const res = await engine.request('POST', '/v1/memories/batch', {
      key: t.key,
      body: { memories: Array.from({ length: 40 }, (_, i) => ({ observation: `batch burst ${i}` })) },
    });
    expect(res.body).toMatchObject({ stored: 40 });
    const events = await anomalies(engine, t);
    expect(events.map((e) => e.payload.data)).toEqual([
      { ...windowOf(engine.clock.now()), count: 500, threshold: 500, request_id: res.headers.get('x-request-id') },
    ]);
  });
});

describe('server_errors', () => {
  // An embedding provider that refuses connections: every store of this engine answers 503.
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await createEngine({ env: { EMBEDDING_PROVIDER: 'openai', EMBEDDING_BASE_URL: 'http://127.0.0.1:9/v1' } });
  });
  afterAll(() => engine.close());
  const silent = createLogger('silent');
  afterEach(() => {
    vi.restoreAllMocks();
    engine.node.services.log = silent;
  });

  const failing = async (t: Tenant) => {
    const res = await engine.request('POST', '/v1/memories', { key: t.key, body: { observation: 'no embedder today' } });
    expect(res.status).toBe(503);
    return res;
  };

  it('the 10th response ≥ 500 in a window emits one event; 4xx do not count; other tenants are unaffected', async () => {
    const t = await engine.newTenant('pro');
    const other = await engine.newTenant('pro');
    for (let i = 0; i < 20; i++)
      expect((await engine.request('GET', '/v1/memories/urn:uuid:01935f6e-8a2b-7c3d-9e4f-5a6b7c8d9e0f', { key: t.key })).status).toBe(404);
    for (let i = 0; i < 9; i++) await failing(t);
    for (let i = 0; i < 9; i++) await failing(other);
    expect(await anomalies(engine, t)).toEqual([]);

    const crossing = await failing(t);
    let events = await anomalies(engine, t);
    expect(events.map((e) => e.type)).toEqual(['anomaly.server_errors']);
    expect(events[0].payload.data).toEqual({ ...windowOf(engine.clock.now()), count: 10, threshold: 10, request_id: crossing.headers.get('x-request-id') });
    for (let i = 0; i < 5; i++) await failing(t);
    expect(await anomalies(engine, t)).toHaveLength(1);
    expect(await anomalies(engine, other)).toEqual([]);

    // The next window, 15 failures at once: one more event.
    engine.clock.advance(MINUTE);
    await Promise.all(Array.from({ length: 15 }, () => failing(t)));
    events = await anomalies(engine, t);
    expect(events).toHaveLength(2);
    expect(events[1].payload.data).toMatchObject({ ...windowOf(engine.clock.now()), count: 10, threshold: 10 });

    const summary = await engine.request('GET', '/v1/audit/summary', { key: t.key });
    expect(summary.body).toMatchObject({ error_count: 20 + 30, anomaly_count: 30, anomalies: { bulk_delete: 0, rapid_writes: 0, server_errors: 2 } });
    const audit = await engine.request('GET', '/v1/audit?limit=1000', { key: t.key });
    const entries = audit.body.entries.filter((e: { operation: string }) => e.operation === 'anomaly.server_errors');
    expect(entries.map((e) => [e.actor, e.resource_type])).toEqual([
      ['system', 'tenant'],
      ['system', 'tenant'],
    ]);
    expect((await engine.request('GET', '/v1/audit/summary', { key: other.key })).body).toMatchObject({ anomaly_count: 9, anomalies: { server_errors: 0 } });
  });

  it('when the anomaly cannot be stored, the failing request still gets its own answer and the loss is logged', async () => {
    const t = await engine.newTenant('pro');
    const fn = `engram_test_refuse_${t.tenantId.toLowerCase().replace(/[^a-z0-9]/g, '')}`;
    // The database refuses this tenant's anomaly event, as a database in trouble would.
    await engine.node.services.db.execute(
      sql.raw(`CREATE OR REPLACE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.tenant_id = '${t.tenantId}' AND NEW.type LIKE 'anomaly.%' THEN RAISE EXCEPTION 'refused by the test trigger'; END IF;
          RETURN NEW;
        END $$`),
    );
    await engine.node.services.db.execute(sql.raw(`CREATE TRIGGER ${fn} BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION ${fn}()`));
    try {
      engine.node.services.log = createLogger('error');
      const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
      for (let i = 0; i < 9; i++) await failing(t);
      expect(logged).not.toHaveBeenCalled();
      const crossing = await failing(t);
      expect(crossing.body).toMatchObject({ code: 'SERVICE_UNAVAILABLE', status: 503 });
      const lines = logged.mock.calls.map((c) => JSON.parse(String(c[0])));
      expect(lines).toEqual([
        expect.objectContaining({ level: 'error', msg: 'could not record anomaly.server_errors', request_id: crossing.headers.get('x-request-id') }),
      ]);
      expect(await anomalies(engine, t)).toEqual([]);
      // Nothing half-written: no audit entry without its event.
      expect((await engine.request('GET', '/v1/audit/summary', { key: t.key })).body.anomalies.server_errors).toBe(0);
    } finally {
      await engine.node.services.db.execute(sql.raw(`DROP TRIGGER IF EXISTS ${fn} ON events`));
      await engine.node.services.db.execute(sql.raw(`DROP FUNCTION IF EXISTS ${fn}()`));
    }
  });
});
