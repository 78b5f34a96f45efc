import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { edgesAt } from '../shared/memory/edge-history';
import { createEngine, errorOf, type Tenant, type TestEngine } from './harness';
import { replayHelpers } from './replay-helpers';

let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const { tick, now, iso, get, store, del, snapshotAt, history } = replayHelpers(() => engine);

describe('GET /v1/replay/timeline', () => {
  it('lists state changes newest first with preview, agent, importance, hash and metadata; records first_replay', async () => {
    const t = await engine.newTenant('pro');
    const { a, b, c } = await history(t);
    const res = await get(t, '/v1/replay/timeline');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ total_count: 5, has_more: false, limit: 100, offset: 0 });
    expect(res.body.entries.map((e: { operation: string; memory_id: string }) => [e.operation, e.memory_id])).toEqual([
      ['create', c],
      ['delete', b],
      ['update', a],
      ['create', b],
      ['create', a],
    ]);
    const update = res.body.entries[2];
    expect(update).toMatchObject({ observation_preview: 'Invoices go out in USD.', agent_id: 'billing-agent', importance: 7 });
    expect(update.metadata.changed).toEqual(['observation', 'importance']);
    expect(update.content_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(res.body.entries[1]).toMatchObject({ observation_preview: 'The office plant needs water on Mondays.', importance: 5 });
    expect(Date.parse(res.body.period_start as string)).toBe(Date.parse(res.body.entries[4].timestamp));
    expect(Date.parse(res.body.period_end)).toBeLessThanOrEqual(now().getTime());
    const milestones = await get(t, '/v1/milestones');
    expect(milestones.body.milestones.map((m: { milestone: string }) => m.milestone)).toContain('first_replay');
  });

  it('filters by operations, agent_id and an inclusive since/until; pages with limit and offset', async () => {
    const t = await engine.newTenant('pro');
    const { a, b, c, t1, t2 } = await history(t);
    const deletes = await get(t, '/v1/replay/timeline?operations=delete');
    expect(deletes.body.entries.map((e: { memory_id: string }) => e.memory_id)).toEqual([b]);
    const mixed = await get(t, '/v1/replay/timeline?operations=create,%20UPDATE');
    expect(mixed.body.total_count).toBe(4);
    const agent = await get(t, '/v1/replay/timeline?agent_id=billing-agent');
    expect(agent.body.entries.map((e: { memory_id: string }) => e.memory_id)).toEqual([a, a]);
    const window = await get(t, `/v1/replay/timeline?since=${iso(t1)}&until=${iso(t2)}`);
    expect(window.body.entries.map((e: { operation: string }) => e.operation)).toEqual(['update']);
    expect(window.body).toMatchObject({ period_start: iso(t1), period_end: iso(t2) });
    const exact = window.body.entries[0].timestamp;
    expect((await get(t, `/v1/replay/timeline?since=${exact}&until=${exact}`)).body.total_count).toBe(1);
    const page = await get(t, '/v1/replay/timeline?limit=2&offset=1');
    expect(page.body).toMatchObject({ total_count: 5, has_more: true });
    expect(page.body.entries.map((e: { memory_id: string }) => e.memory_id)).toEqual([b, a]);
    expect((await get(t, '/v1/replay/timeline?limit=2&offset=4')).body).toMatchObject({ has_more: false, entries: [{ memory_id: a }] });
    expect((await get(t, '/v1/replay/timeline?since=5%20minutes%20ago')).body.total_count).toBe(5);
    expect(c).toBeTruthy();
  });

  it('shows a TTL purge as a delete with metadata.reason "expired"', async () => {
    const t = await engine.newTenant('pro');
    const m = await store(t, { observation: 'Temporary door code 4711.', ttl_seconds: 60 });
    tick(61_000);
    await engine.node.runner.maintain();
    const res = await get(t, '/v1/replay/timeline?operations=delete');
    expect(res.body.entries).toHaveLength(1);
    expect(res.body.entries[0]).toMatchObject({ operation: 'delete', memory_id: m.body.id, metadata: { reason: 'expired' } });
  });

  it('rejects bad input: 400 naming the field; since after until is 422 INVALID_RANGE', async () => {
    const t = await engine.newTenant('pro');
    const cases: [string, string][] = [
      ['operations=create,recall', 'operations'],
      ['operations=', 'operations'],
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['limit=ten', 'limit'],
      ['offset=-1', 'offset'],
      ['since=yesterday', 'since'],
      ['until=2026-02-30T00:00:00Z', 'until'],
      ['agent_id=', 'agent_id'],
    ];
    for (const [query, field] of cases) {
      const res = await get(t, `/v1/replay/timeline?${query}`);
      expect(res.status, query).toBe(400);
      expect(errorOf(res).code).toBe('VALIDATION_ERROR');
      expect(
        errorOf(res).details?.map((d: { path: string }) => d.path),
        query,
      ).toContain(field);
    }
    const range = await get(t, '/v1/replay/timeline?since=2026-11-22T10:00:00Z&until=2026-11-22T09:00:00Z');
    expect(range.status).toBe(422);
    expect(range.body).toMatchObject({ code: 'INVALID_RANGE', details: [{ path: 'since' }] });
  });
});

describe('GET /v1/replay/snapshot', () => {
  it('shows each memory as it was at the moment, in creation order', async () => {
    const t = await engine.newTenant('pro');
    const { a, b, c, t1, t2, t3 } = await history(t);
    const at1 = await snapshotAt(t, t1);
    expect(at1.status).toBe(200);
    expect(at1.body).toMatchObject({ snapshot_at: iso(t1), total_memories: 2, has_more: false, limit: 500, offset: 0 });
    expect(at1.body.memories[0]).toEqual({
      uuid: a,
      observation: 'Invoices go out in EUR.',
      context: null,
      agent_id: 'billing-agent',
      tags: ['billing'],
      importance: 4,
      confidence: 1,
      created_at: expect.any(String),
      space_id: null,
    });
    expect(at1.body.memories[1].uuid).toBe(b);
    const at2 = await snapshotAt(t, t2);
    expect(at2.body.memories.map((m: { observation: string }) => m.observation)).toEqual([
      'Invoices go out in USD.',
      'The office plant needs water on Mondays.',
    ]);
    const at3 = await snapshotAt(t, t3);
    expect(at3.body.memories.map((m: { uuid: string }) => m.uuid)).toEqual([a, c]);
    const before = await snapshotAt(t, new Date(Date.parse(at1.body.memories[0].created_at) - 1));
    expect(before.body).toMatchObject({ total_memories: 0, memories: [], edges: [], total_edges: 0 });
  });

  it('includes changes made at exactly `at`, and pages with limit and offset in creation order', async () => {
    const t = await engine.newTenant('pro');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await store(t, { observation: `Note number ${i} about topic ${i * 7}.`, auto_link: false })).body.id);
      tick(1_000);
    }
    const created = (await get(t, `/v1/memories/${ids[2]}`)).body.created_at;
    expect((await snapshotAt(t, new Date(created))).body.total_memories).toBe(3);
    const page = await snapshotAt(t, now(), '&limit=2&offset=2');
    expect(page.body).toMatchObject({ total_memories: 5, has_more: true, limit: 2, offset: 2 });
    expect(page.body.memories.map((m: { uuid: string }) => m.uuid)).toEqual(ids.slice(2, 4));
  });

  it('leaves out a memory whose TTL had run out at `at`, before and after the purge', async () => {
    const t = await engine.newTenant('pro');
    await store(t, { observation: 'Short-lived secret.', ttl_seconds: 60 });
    tick(30_000);
    const during = now();
    tick(40_000);
    expect((await snapshotAt(t, during)).body.total_memories).toBe(1);
    expect((await snapshotAt(t, now())).body.total_memories).toBe(0);
    await engine.node.runner.maintain();
    tick(1_000);
    expect((await snapshotAt(t, during)).body.total_memories).toBe(1);
    expect((await snapshotAt(t, now())).body.total_memories).toBe(0);
  });

  it('shows the edges of the moment: links die with their ends', async () => {
    const t = await engine.newTenant('pro');
    const a = await store(t, { observation: 'The staging database runs Postgres 15 with pgvector.' });
    const b = await store(t, { observation: 'The staging database runs Postgres 15 with pgvector enabled.' });
    expect(b.body.auto_links).toEqual([a.body.id]);
    tick(5_000);
    const linked = now();
    tick(5_000);
    const live = await snapshotAt(t, linked);
    expect(live.body.total_edges).toBe(1);
    const [edge] = live.body.edges;
    expect(edge).toMatchObject({ source_id: b.body.id, target_id: a.body.id, relation: 'similar' });
    expect(edge.weight).toBeGreaterThanOrEqual(0.8);
    const current = await get(t, `/v1/replay/memory/${b.body.id}`);
    expect(current.body.links[0].edge_id).toBe(edge.edge_id);
    // Only the page holding the source lists the edge.
    expect((await snapshotAt(t, linked, '&limit=1')).body).toMatchObject({ edges: [], total_edges: 1 });
    expect((await snapshotAt(t, linked, '&limit=1&offset=1')).body.edges).toEqual([edge]);

    await del(t, a.body.id);
    tick(1_000);
    expect((await snapshotAt(t, now())).body).toMatchObject({ total_memories: 1, edges: [], total_edges: 0 });
    const past = await snapshotAt(t, linked);
    expect(past.body.total_edges).toBe(1);
    expect(past.body.edges[0]).toMatchObject({ source_id: b.body.id, target_id: a.body.id, relation: 'similar' });
    expect(past.body.edges[0].edge_id).toMatch(/^urn:uuid:[0-9a-f-]{36}$/);
    // The same rule, for callers that need every link of a moment (rollback).
    const bare = (urn: string) => urn.replace('urn:uuid:', '');
    expect(await edgesAt(engine.node.services.db, t.tenantId, linked)).toEqual([
      { source_id: bare(b.body.id), target_id: bare(a.body.id), relation: 'similar', weight: edge.weight },
    ]);
    expect(await edgesAt(engine.node.services.db, t.tenantId, now())).toEqual([]);
  });

  it("a link dies when an end's TTL runs out, before the purge says so", async () => {
    const t = await engine.newTenant('pro');
    const a = await store(t, { observation: 'The guest wifi password is tulip-42.', ttl_seconds: 60 });
    const b = await store(t, { observation: 'The guest wifi password is tulip-42 this week.' });
    expect(b.body.auto_links).toEqual([a.body.id]);
    tick(30_000);
    const during = now();
    tick(40_000);
    expect((await snapshotAt(t, during)).body).toMatchObject({ total_memories: 2, total_edges: 1 });
    const lapsed = await snapshotAt(t, now());
    expect(lapsed.body).toMatchObject({ total_memories: 1, total_edges: 0, edges: [] });
    await engine.node.runner.maintain();
    tick(1_000);
    expect((await snapshotAt(t, now())).body).toMatchObject({ total_memories: 1, total_edges: 0 });
    expect((await snapshotAt(t, during)).body).toMatchObject({ total_memories: 2, total_edges: 1 });
  });

  it('rejects a missing, malformed or future `at` and out-of-range limits with 400', async () => {
    const t = await engine.newTenant('pro');
    const cases: [string, string][] = [
      ['', 'at'],
      ['at=noon', 'at'],
      [`at=${iso(new Date(now().getTime() + 60_000))}`, 'at'],
      [`at=${iso(now())}&limit=0`, 'limit'],
      [`at=${iso(now())}&limit=5001`, 'limit'],
      [`at=${iso(now())}&offset=-5`, 'offset'],
    ];
    for (const [query, field] of cases) {
      const res = await get(t, `/v1/replay/snapshot?${query}`);
      expect(res.status, query).toBe(400);
      expect(errorOf(res).code).toBe('VALIDATION_ERROR');
      expect(
        errorOf(res).details?.map((d: { path: string }) => d.path),
        query,
      ).toContain(field);
    }
    expect((await get(t, `/v1/replay/snapshot?at=${iso(now())}&limit=5000`)).status).toBe(200);
  });
});

const ROUTES = ['/v1/replay/timeline', '/v1/replay/snapshot', '/v1/replay/diff', '/v1/replay/memory/{id}', '/v1/replay/recall'];

/** A valid request for each route (the memory route needs a memory of the caller). */
async function validPaths(t: Tenant) {
  const m = await store(t, { observation: 'Gate check memory.' });
  tick(1_000);
  const stamp = iso(now());
  const earlier = iso(new Date(now().getTime() - 60_000));
  return [
    '/v1/replay/timeline',
    `/v1/replay/snapshot?at=${stamp}`,
    `/v1/replay/diff?from=${earlier}&to=${stamp}`,
    `/v1/replay/memory/${m.body.id}`,
    `/v1/replay/recall?q=gate&at=${stamp}`,
  ];
}

describe('tier gate', () => {
  it('free and starter are 403 FEATURE_NOT_AVAILABLE with required_tier pro; pro and enterprise pass', async () => {
    for (const tier of ['free', 'starter'] as const) {
      const t = await engine.newTenant(tier);
      for (const path of await validPaths(t)) {
        const res = await get(t, path);
        expect(res.status, `${tier} ${path}`).toBe(403);
        expect(res.body).toMatchObject({ code: 'FEATURE_NOT_AVAILABLE', required_tier: 'pro', current_tier: tier });
      }
    }
    for (const tier of ['pro', 'enterprise'] as const) {
      const t = await engine.newTenant(tier);
      for (const path of await validPaths(t)) expect((await get(t, path)).status, `${tier} ${path}`).toBe(200);
    }
  });
});

describe('tenant isolation', () => {
  it("never shows another tenant's history", async () => {
    const owner = await engine.newTenant('pro');
    const other = await engine.newTenant('enterprise');
    const { a, t1 } = await history(owner);
    expect((await get(other, '/v1/replay/timeline')).body).toMatchObject({ total_count: 0, entries: [] });
    expect((await snapshotAt(other, t1)).body.total_memories).toBe(0);
    expect((await snapshotAt(other, now())).body.total_memories).toBe(0);
    expect((await get(other, `/v1/replay/diff?from=${iso(t1)}&to=${iso(now())}`)).body.summary).toEqual({ added: 0, removed: 0, modified: 0 });
    expect((await get(other, `/v1/replay/recall?q=invoices&at=${iso(now())}`)).body.total_results).toBe(0);
    expect((await get(other, `/v1/replay/memory/${a}`)).status).toBe(404);
    expect((await get(owner, `/v1/replay/memory/${a}`)).status).toBe(200);
  });
});

describe('OpenAPI', () => {
  it('documents the replay routes under the Replay tag', async () => {
    const res = await engine.request<{ paths: Record<string, { get?: { tags?: string[] } }>; tags: { name: string }[] }>('GET', '/openapi.json');
    for (const path of ROUTES.map((p) => p.replace('{id}', '{memory_id}'))) {
      expect(res.body.paths[path]?.get?.tags, path).toEqual(['Replay']);
    }
    expect(res.body.tags.map((t: { name: string }) => t.name)).toContain('Replay');
  });
});
