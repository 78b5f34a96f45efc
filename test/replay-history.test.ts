import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type TestEngine } from './harness';
import { replayHelpers } from './replay-helpers';

let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const { tick, now, iso, get, store, patch, del, history } = replayHelpers(() => engine);

describe('GET /v1/replay/diff', () => {
  it('reports added, removed and modified memories with a summary', async () => {
    const t = await engine.newTenant('pro');
    const { a, b, c, t1, t3 } = await history(t);
    const res = await get(t, `/v1/replay/diff?from=${iso(t1)}&to=${iso(t3)}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      from_timestamp: iso(t1),
      to_timestamp: iso(t3),
      added: [{ memory_id: c, change_type: 'added', observation_preview: 'Standups start at 9:30.', importance: 5 }],
      removed: [{ memory_id: b, change_type: 'removed', observation_preview: 'The office plant needs water on Mondays.' }],
      modified: [{ memory_id: a, change_type: 'modified', observation_preview: 'Invoices go out in USD.', importance: 7, changed: ['observation', 'importance'] }],
      summary: { added: 1, removed: 1, modified: 1 },
    });
    const quiet = await get(t, `/v1/replay/diff?from=${iso(t3)}&to=${iso(now())}`);
    expect(quiet.body.summary).toEqual({ added: 0, removed: 0, modified: 0 });
  });

  it('a memory whose TTL ran out in between is removed; one changed and changed back is not modified', async () => {
    const t = await engine.newTenant('pro');
    const m = await store(t, { observation: 'Visitor badge 22 is valid.', ttl_seconds: 60 });
    const n = await store(t, { observation: 'Lunch is at noon.', auto_link: false });
    tick(10_000);
    const from = now();
    await patch(t, n.body.id, { importance: 9 });
    await patch(t, n.body.id, { importance: 5 });
    tick(60_000);
    const res = await get(t, `/v1/replay/diff?from=${iso(from)}&to=${iso(now())}`);
    expect(res.body.removed.map((r: { memory_id: string }) => r.memory_id)).toEqual([m.body.id]);
    expect(res.body.summary).toEqual({ added: 0, removed: 1, modified: 0 });
  });

  it('from and to are required (400); from not before to is 422 INVALID_RANGE; the future is 400', async () => {
    const t = await engine.newTenant('pro');
    const stamp = iso(now());
    for (const [query, field] of [['', 'from'], [`from=${stamp}`, 'to'], [`to=${stamp}`, 'from'], [`from=x&to=${stamp}`, 'from']] as const) {
      const res = await get(t, `/v1/replay/diff?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.details.map((d: { path: string }) => d.path)).toContain(field);
    }
    const future = await get(t, `/v1/replay/diff?from=${stamp}&to=${iso(new Date(now().getTime() + 3_600_000))}`);
    expect(future.status).toBe(400);
    expect(future.body.details[0].path).toBe('to');
    for (const to of [stamp, iso(new Date(Date.parse(stamp) - 1_000))]) {
      const res = await get(t, `/v1/replay/diff?from=${stamp}&to=${to}`);
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({ code: 'INVALID_RANGE', details: [{ path: 'from' }] });
    }
  });
});

describe('GET /v1/replay/memory/{memory_id}', () => {
  it('tells the life of a memory: events, versions, links, recalls and its current state', async () => {
    const t = await engine.newTenant('pro');
    const a = await store(t, { observation: 'The staging database runs Postgres 15 with pgvector.', importance: 3 });
    const b = await store(t, { observation: 'The staging database runs Postgres 15 with pgvector enabled.' });
    tick(1_000);
    expect((await get(t, '/v1/memories/search?q=staging%20database%20postgres&limit=2')).body.total_results).toBe(2);
    tick(1_000);
    await patch(t, b.body.id, { observation: 'The staging database runs Postgres 16 with pgvector enabled.', importance: 8 });
    tick(1_000);
    const res = await get(t, `/v1/replay/memory/${b.body.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      memory_id: b.body.id,
      observation: 'The staging database runs Postgres 16 with pgvector enabled.',
      created_at: b.body.created_at,
      current_state: 'active',
      recall_count: 1,
    });
    expect(res.body.events.map((e: { event_type: string }) => e.event_type)).toEqual(['create', 'link', 'recall', 'update']);
    expect(res.body.events[1].detail).toMatchObject({ target_id: a.body.id, relation: 'similar' });
    expect(res.body.events[2].detail).toMatchObject({ query: 'staging database postgres' });
    expect(res.body.events[3].detail).toMatchObject({ changed: ['observation', 'importance'], before: { importance: 5 }, after: { importance: 8 } });
    expect(res.body.versions.map((v: { observation: string; importance: number }) => [/Postgres \d+/.exec(v.observation)?.[0], v.importance])).toEqual([
      ['Postgres 15', 5],
      ['Postgres 16', 8],
    ]);
    expect(res.body.last_recalled_at).toBe(res.body.events[2].timestamp);
    expect(res.body.links).toEqual([expect.objectContaining({ source_id: b.body.id, target_id: a.body.id, relation: 'similar' })]);

    await del(t, a.body.id);
    const gone = await get(t, `/v1/replay/memory/${a.body.id}`);
    expect(gone.body).toMatchObject({ current_state: 'deleted', observation: 'The staging database runs Postgres 15 with pgvector.', links: [] });
    expect(gone.body.events.at(-1)).toMatchObject({ event_type: 'delete', detail: { links: [expect.objectContaining({ source_id: b.body.id })] } });
  });

  it('reports superseded and expired memories', async () => {
    const t = await engine.newTenant('pro');
    const first = await store(t, { observation: 'Deploys happen on Tuesdays.' });
    await store(t, { observation: 'Deploys happen on Tuesdays.' });
    expect((await get(t, `/v1/replay/memory/${first.body.id}`)).body.current_state).toBe('superseded');
    const brief = await store(t, { observation: 'Parking spot 12 is free today.', ttl_seconds: 60 });
    tick(61_000);
    expect((await get(t, `/v1/replay/memory/${brief.body.id}`)).body.current_state).toBe('expired');
    await engine.node.runner.maintain();
    const purged = await get(t, `/v1/replay/memory/${brief.body.id}`);
    expect(purged.body.current_state).toBe('expired');
    expect(purged.body.events.at(-1)).toMatchObject({ event_type: 'expire', detail: { reason: 'expired' } });
  });

  it("is 404 for an unknown memory and for another tenant's, 400 for a malformed id", async () => {
    const owner = await engine.newTenant('pro');
    const other = await engine.newTenant('pro');
    const m = await store(owner, { observation: 'Owner only.' });
    expect((await get(other, `/v1/replay/memory/${m.body.id}`)).status).toBe(404);
    expect((await get(owner, '/v1/replay/memory/urn:uuid:01935f6e-8a2b-7c3d-9e4f-5a6b7c8d9e0f')).body.code).toBe('NOT_FOUND');
    const bad = await get(owner, '/v1/replay/memory/not-a-uuid');
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].path).toBe('memory_id');
  });
});

describe('GET /v1/replay/recall', () => {
  it('searches the store as it was, with the content and embedding of that moment, and records nothing', async () => {
    const t = await engine.newTenant('pro');
    const m = await store(t, { observation: 'The cat sleeps on the red sofa.' });
    await store(t, { observation: 'Quarterly taxes are due in April.' });
    tick(5_000);
    const then = now();
    tick(5_000);
    await patch(t, m.body.id, { observation: 'The dog guards the garden gate.' });
    tick(1_000);
    const past = await get(t, `/v1/replay/recall?q=${encodeURIComponent('cat on the sofa')}&at=${iso(then)}`);
    expect(past.status).toBe(200);
    expect(past.body).toMatchObject({ query: 'cat on the sofa', at: iso(then), total_results: 2 });
    expect(past.body.memories[0]).toMatchObject({ uuid: m.body.id, observation: 'The cat sleeps on the red sofa.', importance: 5, tags: [] });
    expect(past.body.memories[0].similarity).toBeGreaterThan(past.body.memories[1].similarity);
    expect(past.body.memories[0].score).toBe(past.body.memories[0].similarity);
    const present = await get(t, `/v1/replay/recall?q=${encodeURIComponent('cat on the sofa')}&at=${iso(now())}&limit=1`);
    expect(present.body.memories).toHaveLength(1);
    expect(present.body.memories[0].similarity).toBeLessThan(past.body.memories[0].similarity);
    expect((await get(t, `/v1/memories/${m.body.id}`)).body.recall_count).toBe(0);
    expect((await get(t, `/v1/replay/memory/${m.body.id}`)).body.recall_count).toBe(0);
    const early = await get(t, `/v1/replay/recall?q=cat&at=${iso(new Date(Date.parse(m.body.created_at) - 1))}`);
    expect(early.body).toMatchObject({ total_results: 0, memories: [] });
  });

  it('rejects bad input with 400 naming the field', async () => {
    const t = await engine.newTenant('pro');
    const stamp = iso(now());
    const cases: [string, string][] = [
      [`at=${stamp}`, 'q'],
      [`q=%20&at=${stamp}`, 'q'],
      ['q=cat', 'at'],
      [`q=cat&at=${iso(new Date(now().getTime() + 60_000))}`, 'at'],
      [`q=cat&at=${stamp}&limit=0`, 'limit'],
      [`q=cat&at=${stamp}&limit=101`, 'limit'],
    ];
    for (const [query, field] of cases) {
      const res = await get(t, `/v1/replay/recall?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.details.map((d: { path: string }) => d.path), query).toContain(field);
    }
  });
});
