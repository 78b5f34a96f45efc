import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rows } from '../shared/platform/data/db';
import { createEngine, storageName, type Tenant, type TestEngine } from './harness';

/**
 * Rows a rollback writes stay out of the HNSW graph until the vector_index job moves them in
 * (migrations/0006); every vector read must see them meanwhile.
 */
let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const db = () => engine.node.services.db;
const store = async (t: Tenant, observation: string, extra: Record<string, unknown> = {}) => {
  const res = await engine.request('POST', '/v1/memories', { key: t.key, body: { observation, auto_link: false, ...extra } });
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
};
const pendingOf = async (tenantId: string) =>
  (await rows<{ id: string }>(db(), sql`SELECT id::text FROM memories WHERE tenant_id = ${tenantId} AND index_pending ORDER BY id`)).map((r) => r.id);
const search = async (t: Tenant, q: string) =>
  (await engine.request('GET', `/v1/memories/search?q=${encodeURIComponent(q)}&limit=3`, { key: t.key })).body.memories.map((m: { uuid: string }) => m.uuid);

describe('vectors a rollback writes', () => {
  it('are searchable at once, and the job the rollback queues moves them into the index', async () => {
    const t = await engine.newTenant();
    const kept = await store(t, 'the build server lives in rack four');
    const deleted = await store(t, 'invoices are archived every friday');
    const changed = await store(t, 'the office wifi password rotates monthly');
    engine.clock.advance(1000);
    const target = engine.clock.now().toISOString();
    engine.clock.advance(1000);
    await engine.request('DELETE', `/v1/memories/${deleted}`, { key: t.key });
    await engine.request('PATCH', `/v1/memories/${changed}`, { key: t.key, body: { observation: 'parking permits renew in spring' } });
    engine.clock.advance(1000);

    const res = await engine.request('POST', '/v1/rollback', { key: t.key, body: { target } });
    expect(res.body).toMatchObject({ artifacts_restored: 1, memories_reverted: 1 });
    const jobs = await rows<{ topic: string }>(db(), sql`SELECT topic FROM outbox WHERE tenant_id = ${t.tenantId} AND topic = 'vector_index'`);
    expect(jobs).toHaveLength(1);
    expect((await search(t, 'invoices are archived every friday'))[0]).toBe(deleted);
    expect((await search(t, 'the office wifi password rotates monthly'))[0]).toBe(changed);

    await engine.node.runner.drain();
    expect(await pendingOf(t.tenantId)).toEqual([]);
    expect((await search(t, 'invoices are archived every friday'))[0]).toBe(deleted);
    expect((await search(t, 'the office wifi password rotates monthly'))[0]).toBe(changed);
    expect((await search(t, 'the build server lives in rack four'))[0]).toBe(kept);
  });

  it('while pending: search, space search and auto-link read them; the maintenance sweep indexes them', async () => {
    const t = await engine.newTenant('pro');
    const space = (await engine.request('POST', '/v1/context-spaces', { key: t.key, body: { name: 'pending' } })).body.space_id;
    const ids = [];
    for (let i = 0; i < 60; i++) ids.push(await store(t, `note number ${i} about topic ${i % 7}`, { space_id: space }));
    const target = await store(t, 'the quarterly report is due on the fifth', { space_id: space });
    await db().execute(sql`UPDATE memories SET index_pending = true WHERE tenant_id = ${t.tenantId}`);

    expect((await search(t, 'the quarterly report is due on the fifth'))[0]).toBe(target);
    const url = `/v1/context-spaces/${space}/memories?q=${encodeURIComponent('the quarterly report is due on the fifth')}` as const;
    const first = await engine.request('GET', `${url}&limit=1`, { key: t.key });
    expect(first.body.memories.map((m: { uuid: string }) => m.uuid)).toEqual([target]);
    // A deep page (past what the graph alone yields without iterative scans) is still full.
    const deep = await engine.request('GET', `${url}&limit=10&offset=50`, { key: t.key });
    expect(deep.body.memories).toHaveLength(10);
    const linked = await engine.request('POST', '/v1/memories', { key: t.key, body: { observation: 'the quarterly report is due on the fifth!' } });
    expect(linked.body.auto_links).toContain(target);

    await engine.node.runner.maintain();
    expect(await pendingOf(t.tenantId)).toEqual([]);
    expect((await search(t, 'the quarterly report is due on the fifth')).slice(0, 2)).toContain(target);
    expect((await engine.request('GET', `${url}&limit=10&offset=50`, { key: t.key })).body.memories).toHaveLength(10);
  });
});

describe('the live vector', () => {
  it('is halfvec on PostgreSQL and vector embedded, its graph and the live_vector domain of the same type', async () => {
    // pgvector in WebAssembly converts half precision in software: embedded, halfvec made every HNSW
    // insert several times dearer (docs/architecture.md, "The live vector").
    const [live] = await rows<{ column: string; domain: string; graph: string }>(
      db(),
      sql`SELECT format_type(a.atttypid, a.atttypmod) AS column,
            (SELECT format_type(t.typbasetype, t.typtypmod) FROM pg_type t WHERE t.typname = 'live_vector') AS domain,
            (SELECT o.opcname FROM pg_index i JOIN pg_opclass o ON o.oid = i.indclass[0] WHERE i.indexrelid = 'memories_embedding_idx'::regclass) AS graph
          FROM pg_attribute a WHERE a.attrelid = 'memories'::regclass AND a.attname = 'embedding'`,
    );
    const type = storageName === 'postgres' ? 'halfvec' : 'vector';
    expect(live).toEqual({ column: `${type}(512)`, domain: `${type}(512)`, graph: `${type}_cosine_ops` });
  });
});
