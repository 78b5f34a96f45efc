import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../shared/platform/data/log';
import { createEngine, errorOf, type TestEngine } from './harness';

/**
 * Single stores of one tenant that arrive together commit together (functions/memories/store/store.ts,
 * shared/platform/limits/coalesce.ts): each must still answer, and be recorded, as if it had run alone.
 */
let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const store = (key: string, body: Record<string, unknown>, requestId?: string) =>
  engine.request('POST', '/v1/memories', { key, body, headers: requestId ? { 'x-request-id': requestId } : undefined });
async function query<T>(q: ReturnType<typeof sql>): Promise<T[]> {
  return await engine.sql<T>(q);
}
const bare = (urn: string) => urn.slice('urn:uuid:'.length);
const ids = (list: string[]) => `{${list.join(',')}}`;

describe('concurrent single stores of one tenant', () => {
  it('each gets its own 201, audit entry and memory events naming its own key and request, on one valid chain', async () => {
    const t = await engine.newTenant('pro');
    const rotated = await engine.request('POST', '/v1/keys/rotate', { key: t.key });
    const keys = [
      { key: t.key, id: t.keyId },
      { key: rotated.body.new_key as string, id: rotated.body.key_id as string },
    ];
    const n = 24;
    const sent = Array.from({ length: n }, (_, i) => ({
      i,
      ...keys[i % 2],
      requestId: `req-together-${i}`,
      observation: `Together ${i}: the build runs on runner ${i}.`,
    }));
    const res = await Promise.all(sent.map((s) => store(s.key, { observation: s.observation, tags: ['together'], agent_id: `agent-${s.i}` }, s.requestId)));
    for (const r of res) expect(r.status, r.text).toBe(201);
    const memoryIds = res.map((r) => bare(r.body.id));
    expect(new Set(memoryIds).size).toBe(n);

    const audits = await query<{ resource_id: string; actor: string; request_id: string; metadata: { agent_id: string } }>(
      sql`SELECT resource_id, actor, request_id, metadata FROM audit_log WHERE tenant_id = ${t.tenantId} AND operation = 'memory.create'`,
    );
    const events = await query<{ memory_id: string; actor: string; request_id: string; observation: string }>(
      sql`SELECT memory_id, actor, request_id, after->>'observation' AS observation FROM memory_events
          WHERE tenant_id = ${t.tenantId} AND kind = 'create' AND memory_id = ANY(${ids(memoryIds)}::uuid[])`,
    );
    expect(audits).toHaveLength(n);
    expect(events).toHaveLength(n);
    for (const [i, s] of sent.entries()) {
      const audit = audits.find((a) => a.resource_id === res[i].body.id)!;
      expect(audit).toMatchObject({ actor: s.id, request_id: s.requestId, metadata: { agent_id: `agent-${i}` } });
      expect(events.find((e) => e.memory_id === memoryIds[i])).toMatchObject({ actor: s.id, request_id: s.requestId, observation: s.observation });
      expect(res[i].headers.get('x-request-id')).toBe(s.requestId);
    }
    // They did commit together: rows written by one transaction share its id (xmin).
    const transactions = await query<{ n: string | number }>(
      sql`SELECT count(DISTINCT xmin::text) AS n FROM memories WHERE id = ANY(${ids(memoryIds)}::uuid[])`,
    );
    expect(Number(transactions[0].n)).toBeLessThan(n);

    expect((await engine.request('GET', '/v1/audit/verify', { key: t.key })).body).toMatchObject({ valid: true, checked: { memories: n } });
    const seqs = await query<{ seq: string | number }>(sql`SELECT seq FROM events WHERE tenant_id = ${t.tenantId} AND type = 'memory.created' ORDER BY seq`);
    expect(seqs.map((e) => Number(e.seq))).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    const listed = await engine.request('GET', '/v1/memories?limit=100', { key: t.key });
    expect(listed.body.memories.map((m: { observation: string }) => m.observation).sort()).toEqual(sent.map((s) => s.observation).sort());
    const usage = await query<{ value: string | number }>(sql`SELECT value FROM usage_counters WHERE tenant_id = ${t.tenantId} AND metric = 'memories'`);
    expect(Number(usage[0].value)).toBe(n);
  });

  it('answers duplicates among them as stores one after another would: one stored, the rest 409 naming it (reject), or one current (lww)', async () => {
    const t = await engine.newTenant();
    const rejected = await Promise.all(
      Array.from({ length: 10 }, () => store(t.key, { observation: 'Only once: the invoice is due Friday.', on_conflict: 'reject' })),
    );
    const stored = rejected.filter((r) => r.status === 201);
    expect(stored).toHaveLength(1);
    for (const r of rejected.filter((r) => r.status !== 201)) {
      expect(r.status).toBe(409);
      expect(errorOf(r).existing_ids).toEqual([stored[0].body.id]);
    }

    const lww = await Promise.all(Array.from({ length: 10 }, () => store(t.key, { observation: 'Latest wins: the office moved.', on_conflict: 'lww' })));
    for (const r of lww) expect(r.status, r.text).toBe(201);
    const rows = await query<{ id: string; superseded_by: string | null }>(
      sql`SELECT id, superseded_by FROM memories WHERE tenant_id = ${t.tenantId} AND observation = 'Latest wins: the office moved.'`,
    );
    expect(rows).toHaveLength(10);
    expect(rows.filter((r) => r.superseded_by === null)).toHaveLength(1);
    // Every other one names what superseded it, and the chain of supersessions reaches the current one.
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const r of rows) {
      let at = r;
      for (let hops = 0; at.superseded_by && hops < 10; hops++) at = byId.get(at.superseded_by)!;
      expect(at.superseded_by).toBeNull();
    }
    expect(lww.reduce((sum, r) => sum + r.body.superseded.length, 0)).toBe(9);
  });

  it('spends the quota exactly: past the limit the rest are 429, and nothing of theirs is written', async () => {
    const t = await engine.newTenant();
    const period = engine.clock.now().toISOString().slice(0, 7);
    await engine.node.services.db.execute(sql`
      INSERT INTO usage_counters (tenant_id, metric, bucket, value) VALUES (${t.tenantId}, 'memories', ${period}, 4996)`);
    const res = await Promise.all(Array.from({ length: 12 }, (_, i) => store(t.key, { observation: `Quota ${i}` })));
    expect(res.filter((r) => r.status === 201)).toHaveLength(4);
    for (const r of res.filter((r) => r.status !== 201)) expect(r.body).toMatchObject({ code: 'RATE_LIMITED', usage: { limit: 5000 } });
    const usage = await query<{ value: string | number }>(sql`SELECT value FROM usage_counters WHERE tenant_id = ${t.tenantId} AND metric = 'memories'`);
    expect(Number(usage[0].value)).toBe(5000);
    expect((await engine.request('GET', '/v1/memories?limit=100', { key: t.key })).body.memories).toHaveLength(4);
    expect(
      Number(
        (await query<{ n: string | number }>(sql`SELECT count(*) AS n FROM audit_log WHERE tenant_id = ${t.tenantId} AND operation = 'memory.create'`))[0].n,
      ),
    ).toBe(4);
  });

  it('a store that fails the shared transaction fails alone: the others run again and are stored', async () => {
    const t = await engine.newTenant('pro');
    // A fault only this test's texts meet: the database refuses one memory.
    await engine.node.services.db.execute(
      sql.raw(`
      CREATE OR REPLACE FUNCTION engram_test_refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.observation LIKE 'Poison pill%' THEN RAISE EXCEPTION 'injected failure'; END IF;
          IF NEW.observation LIKE 'Slow%' THEN PERFORM pg_sleep(0.5); END IF;
          RETURN NEW;
        END $$`),
    );
    await engine.node.services.db.execute(
      sql.raw('CREATE OR REPLACE TRIGGER engram_test_refuse_poison BEFORE INSERT ON memories FOR EACH ROW EXECUTE FUNCTION engram_test_refuse_poison()'),
    );
    let logged = '';
    for (const level of ['log', 'warn', 'error'] as const)
      vi.spyOn(console, level).mockImplementation((...args: unknown[]) => void (logged += `${args.join(' ')}\n`));
    const quiet = engine.node.services.log;
    engine.node.services.log = createLogger('debug');
    try {
      // Two slow stores take both of the tenant's running slots first, so that every store after
      // them queues and the poisoned one surely commits in a group (alone, it would just fail).
      const slow = ['Slow 1: holds a slot.', 'Slow 2: holds the other.'].map((observation) => store(t.key, { observation }));
      await new Promise((resolve) => setTimeout(resolve, 150));
      const texts = Array.from({ length: 16 }, (_, i) =>
        i === 8 ? 'Poison pill: the database refuses this one.' : `Healthy ${i}: stored whatever its neighbour does.`,
      );
      const res = await Promise.all(texts.map((observation) => store(t.key, { observation })));
      expect(res.map((r) => r.status)).toEqual(texts.map((_, i) => (i === 8 ? 500 : 201)));
      expect((await Promise.all(slow)).map((r) => r.status)).toEqual([201, 201]);
      // The failure is logged (the shared transaction's, then the store's own), without the memories' text.
      expect(logged).toContain('stores committed together failed; each runs again alone');
      expect(logged).toContain('injected failure');
      expect(logged).not.toMatch(/Poison pill|Healthy \d/);
      const listed = await engine.request('GET', '/v1/memories?limit=100', { key: t.key });
      expect(listed.body.memories.map((m: { observation: string }) => m.observation).sort()).toEqual(
        [...texts.filter((_, i) => i !== 8), 'Slow 1: holds a slot.', 'Slow 2: holds the other.'].sort(),
      );
      expect((await engine.request('GET', '/v1/audit/verify', { key: t.key })).body).toMatchObject({ valid: true, checked: { memories: 17 } });
    } finally {
      engine.node.services.log = quiet;
      vi.restoreAllMocks();
      await engine.node.services.db.execute(sql.raw('DROP TRIGGER engram_test_refuse_poison ON memories'));
      await engine.node.services.db.execute(sql.raw('DROP FUNCTION engram_test_refuse_poison()'));
    }
  });

  it('keeps tenants apart: stores of two tenants at once are each in their own store and chain', async () => {
    const a = await engine.newTenant('pro');
    const b = await engine.newTenant('pro');
    const text = 'Two tenants: the same words at the same time.';
    const res = await Promise.all(
      Array.from({ length: 12 }, (_, i) => store(i % 2 ? b.key : a.key, { observation: `${text} ${i % 3}`, on_conflict: 'reject' })),
    );
    // Each tenant stores its three texts once; its own repeats are 409, the other's copies are no duplicates.
    for (const [who, odd] of [
      [a, 0],
      [b, 1],
    ] as const) {
      const mine = res.filter((_, i) => i % 2 === odd);
      expect(mine.filter((r) => r.status === 201)).toHaveLength(3);
      expect(mine.filter((r) => r.status === 409)).toHaveLength(3);
      expect((await engine.request('GET', '/v1/audit/verify', { key: who.key })).body).toMatchObject({ valid: true, checked: { memories: 3 } });
      const owners = await query<{ tenant_id: string }>(
        sql`SELECT DISTINCT tenant_id FROM memories WHERE id = ANY(${ids(mine.filter((r) => r.status === 201).map((r) => bare(r.body.id)))}::uuid[])`,
      );
      expect(owners).toEqual([{ tenant_id: who.tenantId }]);
    }
  });
});
