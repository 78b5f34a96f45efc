import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { hashEmbedder } from '../shared/memory/embeddings';
import { createEngine, errorOf, type TestEngine } from './harness';
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
      modified: [
        { memory_id: a, change_type: 'modified', observation_preview: 'Invoices go out in USD.', importance: 7, changed: ['observation', 'importance'] },
      ],
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
    for (const [query, field] of [
      ['', 'from'],
      [`from=${stamp}`, 'to'],
      [`to=${stamp}`, 'from'],
      [`from=x&to=${stamp}`, 'from'],
    ] as const) {
      const res = await get(t, `/v1/replay/diff?${query}`);
      expect(res.status, query).toBe(400);
      expect(errorOf(res).details?.map((d: { path: string }) => d.path)).toContain(field);
    }
    const future = await get(t, `/v1/replay/diff?from=${stamp}&to=${iso(new Date(now().getTime() + 3_600_000))}`);
    expect(future.status).toBe(400);
    expect(errorOf(future).details?.[0].path).toBe('to');
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

  it("is 404 for an unknown memory, for another tenant's and for an id of any other shape", async () => {
    const owner = await engine.newTenant('pro');
    const other = await engine.newTenant('pro');
    const m = await store(owner, { observation: 'Owner only.' });
    expect((await get(other, `/v1/replay/memory/${m.body.id}`)).status).toBe(404);
    expect(errorOf(await get(owner, '/v1/replay/memory/urn:uuid:01935f6e-8a2b-7c3d-9e4f-5a6b7c8d9e0f')).code).toBe('NOT_FOUND');
    const bad = await get(owner, '/v1/replay/memory/not-a-uuid');
    expect([bad.status, errorOf(bad).code]).toEqual([404, 'NOT_FOUND']);
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

  it('ranks exactly as a cosine over every state present at `at`, before and after states are added', async () => {
    // A model of the store over time, ranked here with the same embedder: the preselection the
    // route does (state_vectors, migrations/0024) must never change the answer.
    const t = await engine.newTenant('pro');
    const embedder = hashEmbedder();
    const words = 'cat sofa red garden gate invoice server deploy tuesday coffee budget cache queue index backup token report'.split(' ');
    const text = (i: number, round: number) =>
      `${words[i % words.length]} ${words[(i * 7 + round) % words.length]} ${words[(i * 3 + 2 * round) % words.length]} note ${i}`;
    const live = new Map<string, string>();
    const moments: { at: Date; state: Map<string, string> }[] = [];
    const q = 'red cat in the garden with coffee';
    const [qv] = await embedder.embed([q]);
    // A memory's vector is stored as the runtime's live_vector: halfvec(512) on PostgreSQL, vector(512)
    // embedded (migrations/0050, 0056); its events widen that copy.
    const [{ type }] = await engine.sql<{ type: string }>(
      sql`SELECT format_type(atttypid, atttypmod) AS type FROM pg_attribute WHERE attrelid = 'memories'::regclass AND attname = 'embedding'`,
    );
    const half = (x: number) => {
      if (type !== 'halfvec(512)') return Math.fround(x);
      const f = Math.fround(x);
      if (f === 0) return 0;
      const step = 2 ** (Math.max(Math.floor(Math.log2(Math.abs(f))), -14) - 10);
      return Math.round(f / step) * step;
    };
    const cosine = async (observation: string) => {
      const v = (await embedder.embed([observation]))[0].map(half);
      let dot = 0,
        a = 0,
        b = 0;
      for (let i = 0; i < v.length; i++) [dot, a, b] = [dot + v[i] * qv[i], a + qv[i] * qv[i], b + v[i] * v[i]];
      return dot / Math.sqrt(a * b); // the route ranks by this and then clamps it to [0, 1]
    };
    const check = async (at: Date, state: Map<string, string>) => {
      const expected = await Promise.all([...state].map(async ([uuid, observation]) => ({ uuid, observation, similarity: await cosine(observation) })));
      expected.sort((x, y) => y.similarity - x.similarity || x.uuid.slice(9).localeCompare(y.uuid.slice(9)));
      const clamp = (x: number) => Math.min(1, Math.max(0, x));
      const own = new Map(expected.map((m) => [m.uuid, m]));
      for (const limit of [3, 100]) {
        const res = await get(t, `/v1/replay/recall?q=${encodeURIComponent(q)}&at=${iso(at)}&limit=${limit}`);
        expect(res.status).toBe(200);
        const got = res.body.memories as { uuid: string; observation: string; similarity: number }[];
        // Equal cosines may come out of float arithmetic a rounding apart, so ties are checked as
        // ties: the same scores in the same order, each memory its own state and score, and
        // nothing below the cut outranking what was returned.
        // Four decimals: the database's cosine runs in single precision over half-precision vectors.
        const top = expected.slice(0, limit);
        expect(got.length).toBe(top.length);
        got.forEach((m, i) => expect(m.similarity).toBeCloseTo(clamp(top[i].similarity), 4));
        for (const m of got) {
          expect(own.get(m.uuid)?.observation).toBe(m.observation);
          expect(m.similarity).toBeCloseTo(clamp(own.get(m.uuid)!.similarity), 4);
        }
        expect(new Set(got.map((m) => m.uuid)).size).toBe(got.length);
      }
    };
    const ids: string[] = [];
    for (let i = 0; i < 24; i++) {
      const res = await store(t, { observation: text(i, 0), auto_link: false });
      ids.push(res.body.id);
      live.set(res.body.id, text(i, 0));
    }
    for (let round = 1; round <= 3; round++) {
      tick(5_000);
      moments.push({ at: now(), state: new Map(live) });
      await check(now(), live); // fills the states of this moment
      tick(5_000);
      for (let i = round; i < ids.length; i += 3) {
        if (!live.has(ids[i])) continue;
        if (i % 2) {
          await patch(t, ids[i], { observation: text(i, round) }); // a new embedding
          live.set(ids[i], text(i, round));
        } else await patch(t, ids[i], { importance: 1 + round }); // same text: the state keeps the earlier embedding
      }
      await del(t, ids[round * 5]);
      live.delete(ids[round * 5]);
    }
    tick(5_000);
    await check(now(), live);
    for (const m of moments) await check(m.at, m.state); // the same moments again, from filled states
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
      expect(
        errorOf(res).details?.map((d: { path: string }) => d.path),
        query,
      ).toContain(field);
    }
  });
});
