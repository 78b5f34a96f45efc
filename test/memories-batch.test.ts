import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, errorOf, type Tenant, type TestEngine } from './harness';

let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const batch = (t: Tenant, memories: unknown[], headers?: Record<string, string>) =>
  engine.request('POST', '/v1/memories/batch', { key: t.key, body: { memories }, headers });
const store = (t: Tenant, body: Record<string, unknown>) => engine.request('POST', '/v1/memories', { key: t.key, body });

async function query<T>(q: ReturnType<typeof sql>): Promise<T[]> {
  return await engine.sql<T>(q);
}
const count = async (q: ReturnType<typeof sql>) => Number((await query<{ n: string | number }>(q))[0].n);
const live = async (t: Tenant) =>
  (await engine.request('GET', '/v1/memories?limit=100', { key: t.key })).body.memories as {
    uuid: string;
    observation: string;
    superseded_by: string | null;
  }[];

describe('POST /v1/memories/batch', () => {
  it('stores each memory with the response a single store gives, one audit entry, memory event and stream event each', async () => {
    const t = await engine.newTenant('pro');
    const res = await batch(t, [
      { observation: 'Batch: the user prefers tea.', tags: ['drinks'], importance: 7 },
      { observation: 'Batch: the user lives in Lisbon.', agent_id: 'importer', ttl_seconds: 3600 },
      { observation: 'Batch: the user has a cat called Miso.' },
    ]);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ stored: 3, failed: 0 });
    expect(res.body.results.map((r: { index: number; status: number }) => [r.index, r.status])).toEqual([
      [0, 201],
      [1, 201],
      [2, 201],
    ]);
    const single = await store(t, { observation: 'Single: for the shape.' });
    for (const r of res.body.results) expect(Object.keys(r.memory ?? {}).sort()).toEqual(Object.keys(single.body).sort());
    const { createHash } = await import('node:crypto');
    expect(res.body.results[0].memory?.hash).toBe(createHash('sha256').update('Batch: the user prefers tea.').digest('hex'));
    expect(res.body.results[1].memory?.expires_at).not.toBeNull();

    const got = await engine.request('GET', `/v1/memories/${res.body.results[0].memory?.id}`, { key: t.key });
    expect(got.body).toMatchObject({ observation: 'Batch: the user prefers tea.', tags: ['drinks'], importance: 7, superseded_by: null });
    const ids = res.body.results.map((r: { memory?: { id: string } }) => r.memory?.id.slice('urn:uuid:'.length));
    expect(
      await count(
        sql`SELECT count(*) AS n FROM audit_log WHERE tenant_id = ${t.tenantId} AND operation = 'memory.create' AND resource_id = ANY(${`{${res.body.results.map((r: { memory?: { id: string } }) => r.memory?.id).join(',')}}`}::text[])`,
      ),
    ).toBe(3);
    expect(
      await count(
        sql`SELECT count(*) AS n FROM memory_events WHERE tenant_id = ${t.tenantId} AND kind = 'create' AND memory_id = ANY(${`{${ids.join(',')}}`}::uuid[])`,
      ),
    ).toBe(3);
    // Each create event's vector is its own memory's live one: no copy, the row's (migrations/0045).
    expect(
      await count(
        sql`SELECT count(*) AS n FROM memory_events e JOIN memories m ON m.id = e.memory_id WHERE e.tenant_id = ${t.tenantId} AND e.kind = 'create' AND e.embedding_live AND e.embedding IS NULL AND m.id = ANY(${`{${ids.join(',')}}`}::uuid[])`,
      ),
    ).toBe(3);
    const events = await query<{ seq: string | number; type: string }>(sql`SELECT seq, type FROM events WHERE tenant_id = ${t.tenantId} ORDER BY seq`);
    expect(events.map((e) => e.type)).toEqual(['memory.created', 'memory.created', 'memory.created', 'memory.created']);
    expect(events.map((e) => Number(e.seq))).toEqual([1, 2, 3, 4]);
    const verify = await engine.request('GET', '/v1/audit/verify', { key: t.key });
    expect(verify.body).toMatchObject({ valid: true, checked: { memories: 4 } });
    // The batch counts against the memory quota like four single stores.
    const usage = await engine.request('GET', '/v1/usage', { key: t.key });
    expect(usage.body.memories).toMatchObject({ current: 4, used: 4 });
    expect((await engine.request('GET', '/v1/dashboard', { key: t.key })).body.memory_count).toBe(4);
    // A stored memory is found at once.
    const found = await engine.request('GET', `/v1/memories/search?q=${encodeURIComponent('cat called Miso')}&limit=1`, { key: t.key });
    expect(found.body.memories[0].uuid).toBe(res.body.results[2].memory?.id);
  });

  it('gives each bad memory its own error and stores the rest', async () => {
    const t = await engine.newTenant();
    const res = await batch(t, [
      { observation: 'fine one' },
      { observation: '' },
      { observation: 'fine two', importance: 11 },
      { observation: 'in a space', space_id: 'urn:uuid:01935f80-3b4c-7d5e-8f6a-7b8c9d0e1f2a' },
      { observation: 'fine three' },
    ]);
    expect(res.status, res.text).toBe(200);
    expect(res.body.results.map((r: { status: number }) => r.status)).toEqual([201, 400, 400, 403, 201]);
    expect(res.body).toMatchObject({ stored: 2, failed: 3 });
    expect(res.body.results[1].error).toMatchObject({ code: 'VALIDATION_ERROR', status: 400, details: [{ path: 'observation' }] });
    expect(res.body.results[2].error?.details?.[0].path).toBe('importance');
    // A single store of the same body answers the same error.
    const alone = await store(t, { observation: 'in a space', space_id: 'urn:uuid:01935f80-3b4c-7d5e-8f6a-7b8c9d0e1f2a' });
    expect(res.body.results[3].error).toMatchObject({ code: errorOf(alone).code, status: alone.status, message: errorOf(alone).message });
    expect((await live(t)).map((m) => m.observation).sort()).toEqual(['fine one', 'fine three']);
  });

  it('refuses a bad envelope whole: no list, an empty list, more than 100', async () => {
    const t = await engine.newTenant();
    expect((await engine.request('POST', '/v1/memories/batch', { key: t.key, body: { observation: 'x' } })).status).toBe(400);
    expect((await batch(t, [])).status).toBe(400);
    expect(
      (
        await batch(
          t,
          Array.from({ length: 101 }, (_, i) => ({ observation: `m${i}` })),
        )
      ).status,
    ).toBe(400);
    expect((await batch(t, ['not an object'])).status).toBe(400);
    expect(await live(t)).toEqual([]);
  });

  it('sees earlier memories of the same request as duplicates, as stores one after another would', async () => {
    const t = await engine.newTenant();
    const old = await store(t, { observation: 'same text' });
    const res = await batch(t, [
      { observation: 'same text' }, // lww: supersedes the stored one
      { observation: 'same text', on_conflict: 'reject' }, // 409 naming the one just stored
      { observation: 'same text', on_conflict: 'manual' }, // stored, flagged, nothing superseded
      { observation: 'same text' }, // lww: supersedes both current copies
      { observation: 'other text', on_conflict: 'reject' },
    ]);
    expect(res.body.results.map((r: { status: number }) => r.status)).toEqual([201, 409, 201, 201, 201]);
    const [first, , manual, last] = res.body.results.map((r: { memory?: { id: string } }) => r.memory);
    expect(res.body.results[0].memory).toMatchObject({ conflict_detected: true, superseded: [old.body.id] });
    expect(res.body.results[1].error).toMatchObject({ code: 'CONFLICT', existing_ids: [first?.id] });
    expect(res.body.results[2].memory).toMatchObject({ conflict_detected: true, superseded: [] });
    expect(res.body.results[3].memory?.superseded.sort()).toEqual([first?.id, manual?.id].sort());
    for (const id of [old.body.id, first?.id, manual?.id]) {
      const m = await engine.request('GET', `/v1/memories/${id}`, { key: t.key });
      expect(m.body.superseded_by, id).toBe(id === old.body.id ? first?.id : last?.id);
    }
    // Each superseding is an update event, in order.
    const updates = await query<{ memory_id: string; superseded_by: string }>(
      sql`SELECT memory_id::text, after->>'superseded_by' AS superseded_by FROM memory_events WHERE tenant_id = ${t.tenantId} AND kind = 'update' ORDER BY id`,
    );
    expect(updates.map((u) => [`urn:uuid:${u.memory_id}`, u.superseded_by])).toEqual([
      [old.body.id, first?.id],
      [first?.id, last?.id],
      [manual?.id, last?.id],
    ]);
  });

  it('auto-links to earlier memories of the same request', async () => {
    const t = await engine.newTenant();
    const text = 'the quarterly report is due on friday for the finance team';
    const res = await batch(t, [{ observation: text }, { observation: `${text} again` }]);
    expect(res.body.results[0].memory?.auto_links).toEqual([]);
    expect(res.body.results[1].memory?.auto_links).toEqual([res.body.results[0].memory?.id]);
    const edges = await count(sql`SELECT count(*) AS n FROM memory_edges WHERE tenant_id = ${t.tenantId}`);
    expect(edges).toBe(1);
  });

  it('spends the quota in order: past the limit each memory is 429 with usage, the ones before are stored', async () => {
    const t = await engine.newTenant();
    const period = engine.clock.now().toISOString().slice(0, 7);
    await engine.node.services.db.execute(sql`
      INSERT INTO usage_counters (tenant_id, metric, bucket, value) VALUES (${t.tenantId}, 'memories', ${period}, 4997)`);
    const res = await batch(t, [
      { observation: 'q1' },
      { observation: 'q-dup', on_conflict: 'reject' },
      { observation: 'q-dup', on_conflict: 'reject' }, // 409: spends nothing
      { observation: 'q2' },
      { observation: 'q3' },
      { observation: 'q2', on_conflict: 'reject' }, // the quota is checked first, as a single store does
    ]);
    expect(res.body.results.map((r: { status: number }) => r.status)).toEqual([201, 201, 409, 201, 429, 429]);
    expect(res.body.results[4].error).toMatchObject({ code: 'RATE_LIMITED', usage: { limit: 5000, plan: 'free' } });
    expect(await count(sql`SELECT value AS n FROM usage_counters WHERE tenant_id = ${t.tenantId} AND metric = 'memories'`)).toBe(5000);
    expect((await live(t)).map((m) => m.observation).sort()).toEqual(['q-dup', 'q1', 'q2']);
  });

  it('keeps tenants apart: another tenant’s copy is no duplicate, no link, and stays untouched', async () => {
    const a = await engine.newTenant();
    const b = await engine.newTenant();
    const text = 'shared words about the deployment pipeline and its release train';
    const theirs = await store(a, { observation: text });
    const res = await batch(b, [{ observation: text }, { observation: `${text} too`, on_conflict: 'reject' }]);
    expect(res.body.results.map((r: { status: number }) => r.status)).toEqual([201, 201]);
    expect(res.body.results[0].memory).toMatchObject({ conflict_detected: false, superseded: [] });
    expect(res.body.results[1].memory?.auto_links).toEqual([res.body.results[0].memory?.id]);
    expect((await engine.request('GET', `/v1/memories/${theirs.body.id}`, { key: a.key })).body.superseded_by).toBeNull();
    expect((await engine.request('GET', `/v1/memories/${res.body.results[0].memory?.id}`, { key: a.key })).status).toBe(404);
    expect(await count(sql`SELECT count(*) AS n FROM audit_log WHERE tenant_id = ${a.tenantId} AND operation = 'memory.create'`)).toBe(1);
  });

  it('a rollback to before the batch removes every memory it stored', async () => {
    const t = await engine.newTenant('pro');
    await store(t, { observation: 'before the batch' });
    engine.clock.advance(1_000);
    const target = engine.clock.now().toISOString();
    engine.clock.advance(1_000);
    try {
      const res = await batch(
        t,
        Array.from({ length: 20 }, (_, i) => ({ observation: `imported fact ${i}` })),
      );
      expect(res.body.stored).toBe(20);
      engine.clock.advance(1_000);
      const rolled = await engine.request('POST', '/v1/rollback', { key: t.key, body: { target } });
      expect(rolled.status, rolled.text).toBe(200);
      expect(rolled.body).toMatchObject({ success: true });
      expect((await live(t)).map((m) => m.observation)).toEqual(['before the batch']);
      expect((await engine.request('GET', '/v1/audit/verify', { key: t.key })).body.valid).toBe(true);
    } finally {
      engine.clock.advance(-3_000);
    }
  });

  it('with Idempotency-Key a repeat replays the batch instead of storing it again', async () => {
    const t = await engine.newTenant();
    const headers = { 'Idempotency-Key': 'batch-import-1' };
    const body = [{ observation: 'idem one' }, { observation: 'idem two' }];
    const first = await batch(t, body, headers);
    const again = await batch(t, body, headers);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect((await live(t)).length).toBe(2);
  });
});
