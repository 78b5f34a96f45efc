import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rows } from '../shared/platform/data/db';
import { rebuildReplayIntervals } from '../shared/memory/intervals';
import { createEngine, type Tenant, type TestEngine } from './harness';

/**
 * Properties of replay against a model kept by the test: random creates, patches, deletes (and
 * rollbacks) over HTTP with the clock moved 1 to 60 s between them; at random moments T between
 * operations, the snapshot at T equals the model at T, and a rollback to T makes the live store
 * equal that snapshot.
 */
let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

/** mulberry32: small, seeded, good enough to pick operations. */
function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  return { next, int, pick: <T>(list: T[]) => list[int(list.length)] };
}

interface Item {
  observation: string;
  tags: string[];
  importance: number;
}
type Model = Map<string, Item>;
type Edge = string; // `${source} ${target} ${relation}`

/** The model after each operation, with the span of time in which it was the truth. */
interface Span {
  from: number;
  to: number;
  memories: Model;
  edges: Set<Edge>;
}

const WORDS = 'alpha beta gamma delta invoice server deploy tuesday coffee budget cache queue index backup token report'.split(' ');
const now = () => engine.clock.now();
const iso = (ms: number) => new Date(ms).toISOString();

const sorted = (m: Model) => [...m.entries()].map(([uuid, v]) => ({ uuid, ...v })).sort((x, y) => x.uuid.localeCompare(y.uuid));

async function snapshotAt(t: Tenant, at: number, pageSize: number) {
  const memories: { uuid: string; observation: string; tags: string[]; importance: number; created_at: string }[] = [];
  const edges = new Set<Edge>();
  for (let offset = 0; ; offset += pageSize) {
    const res = await engine.request('GET', `/v1/replay/snapshot?at=${iso(at)}&limit=${pageSize}&offset=${offset}`, { key: t.key });
    expect(res.status, res.text).toBe(200);
    memories.push(...res.body.memories);
    for (const e of res.body.edges) edges.add(`${e.source_id} ${e.target_id} ${e.relation}`);
    if (!res.body.has_more) {
      expect(memories).toHaveLength(res.body.total_memories);
      expect(edges.size).toBe(res.body.total_edges);
      break;
    }
  }
  // Creation order across pages (the clock only moves forward here, so ids are created in order).
  const created = memories.map((m) => Date.parse(m.created_at));
  expect(created).toEqual([...created].sort((x, y) => x - y));
  const model: Model = new Map(memories.map((m) => [m.uuid, { observation: m.observation, tags: m.tags, importance: m.importance }]));
  return { memories: model, edges };
}

async function liveStore(t: Tenant) {
  const memories: Model = new Map();
  for (let offset = 0; ; offset += 100) {
    const res = await engine.request('GET', `/v1/memories?limit=100&offset=${offset}`, { key: t.key });
    for (const m of res.body.memories) memories.set(m.uuid, { observation: m.observation, tags: m.tags, importance: m.importance });
    if (!res.body.has_more) break;
  }
  const found = await engine.sql<{ s: string; t: string; relation: string }>(
    sql`SELECT source_id::text AS s, target_id::text AS t, relation FROM memory_edges WHERE tenant_id = ${t.tenantId}`,
  );
  return { memories, edges: new Set(found.map((r) => `urn:uuid:${r.s} urn:uuid:${r.t} ${r.relation}`)) };
}

/**
 * Runs `steps` random operations, keeping the model and the span of time of each state. With
 * `rollbacks`, some operations are rollbacks to a random earlier moment (the model goes back to its
 * state then, edges excepted: those are compared against the snapshot, not modelled).
 */
async function randomHistory(t: Tenant, seed: number, rollbacks: boolean) {
  const r = prng(seed);
  const steps = 30 + r.int(31);
  let memories: Model = new Map();
  let edges = new Set<Edge>();
  const spans: Span[] = [];
  let undone = 0;
  let start = now().getTime();
  const close = () => spans.push({ from: start, to: now().getTime(), memories: new Map(memories), edges: new Set(edges) });
  for (let step = 0; step < steps; step++) {
    engine.clock.advance(1_000 + r.int(59_001));
    close();
    const ids = [...memories.keys()];
    const roll = r.next();
    if (rollbacks && spans.length > 2 && roll < 0.12) {
      const span = spans[r.int(spans.length - 1)];
      const target = span.from + 1 + r.int(Math.max(1, span.to - span.from - 1));
      const res = await engine.request('POST', '/v1/rollback', { key: t.key, body: { target: iso(target) } });
      expect(res.status, res.text).toBe(200);
      expect(res.body.success).toBe(true);
      undone += res.body.operations_undone + res.body.artifacts_restored + res.body.memories_reverted;
      memories = new Map(span.memories);
      edges = new Set(); // not modelled after a rollback
    } else if (!ids.length || roll < 0.45) {
      // A variant of an existing memory now and then, so auto-links (cosine >= 0.8) happen.
      const words = Array.from({ length: 3 + r.int(3) }, () => r.pick(WORDS)).join(' ');
      const observation = ids.length && r.next() < 0.3 ? `${memories.get(r.pick(ids))!.observation} ${r.pick(WORDS)}` : words;
      const item = { observation, tags: [...new Set(Array.from({ length: r.int(3) }, () => r.pick(WORDS)))], importance: 1 + r.int(10) };
      const res = await engine.request('POST', '/v1/memories', { key: t.key, body: item });
      expect(res.status, res.text).toBe(201);
      memories.set(res.body.id, item);
      for (const target of res.body.auto_links) edges.add(`${res.body.id} ${target} similar`);
    } else if (roll < 0.8) {
      const id = r.pick(ids);
      const body: Partial<Item> = {};
      if (r.next() < 0.5) body.observation = Array.from({ length: 3 + r.int(3) }, () => r.pick(WORDS)).join(' ');
      if (r.next() < 0.5) body.importance = 1 + r.int(10);
      if (r.next() < 0.4 || !Object.keys(body).length) body.tags = [r.pick(WORDS)];
      const res = await engine.request('PATCH', `/v1/memories/${id}`, { key: t.key, body });
      expect(res.status, res.text).toBe(200);
      memories.set(id, { ...memories.get(id)!, ...body });
    } else {
      const id = r.pick(ids);
      expect((await engine.request('DELETE', `/v1/memories/${id}`, { key: t.key })).status).toBe(200);
      memories.delete(id);
      edges = new Set([...edges].filter((e) => !e.split(' ').slice(0, 2).includes(id)));
    }
    start = now().getTime();
  }
  engine.clock.advance(1_000 + r.int(59_001));
  close();
  return { r, spans, steps, undone };
}

/**
 * The interval tables written event by event (recordMemoryEvents) hold exactly what the backfill
 * of migrations/0007 and 0008 derives from the whole log (rebuildReplayIntervals).
 */
async function expectIntervalsRebuildTheSame(t: Tenant) {
  const db = engine.node.services.db;
  const read = async () => ({
    memories: await rows(
      db,
      sql`SELECT event_id, memory_id::text, valid_from, valid_to, created_at, expires_at FROM memory_states WHERE tenant_id = ${t.tenantId} ORDER BY event_id`,
    ),
    edges: await rows(
      db,
      sql`SELECT event_id, source_id::text, target_id::text, relation, weight, valid_from, valid_to FROM edge_states WHERE tenant_id = ${t.tenantId} ORDER BY event_id`,
    ),
  });
  const incremental = await read();
  expect(incremental.memories.length).toBeGreaterThan(0);
  await rebuildReplayIntervals(db, t.tenantId);
  expect(await read()).toEqual(incremental);
}

/** A moment strictly inside a span (never on an operation's own timestamp). */
const momentIn = (r: ReturnType<typeof prng>, s: Span) => s.from + 1 + r.int(Math.max(1, s.to - s.from - 1));

describe('snapshot at T equals the model at T', () => {
  for (const seed of [11, 22, 33]) {
    it(`seed ${seed}: memories and edges at random moments, read in random page sizes`, async () => {
      const t = await engine.newTenant('pro');
      const { r, spans } = await randomHistory(t, seed, false);
      const picks = [spans[0], spans.at(-1)!, ...Array.from({ length: 6 }, () => r.pick(spans))];
      for (const span of picks) {
        const at = momentIn(r, span);
        const snap = await snapshotAt(t, at, 1 + r.int(25));
        expect(sorted(snap.memories), `at ${iso(at)}`).toEqual(sorted(span.memories));
        expect([...snap.edges].sort(), `edges at ${iso(at)}`).toEqual([...span.edges].sort());
      }
      await expectIntervalsRebuildTheSame(t);
    });
  }
});

describe('with rollbacks in the history', () => {
  for (const seed of [44, 55, 66]) {
    it(`seed ${seed}: snapshots follow the model through rollbacks; a rollback to T makes the live store equal the snapshot at T`, async () => {
      const t = await engine.newTenant('pro');
      const { r, spans, undone } = await randomHistory(t, seed, true);
      expect(undone, 'the rollbacks in the history changed something').toBeGreaterThan(0);
      for (let i = 0; i < 6; i++) {
        const span = r.pick(spans);
        const snap = await snapshotAt(t, momentIn(r, span), 1 + r.int(25));
        expect(sorted(snap.memories)).toEqual(sorted(span.memories));
      }
      for (let round = 0; round < 3; round++) {
        const span = r.pick(spans);
        const target = momentIn(r, span);
        const before = await snapshotAt(t, target, 500);
        engine.clock.advance(1_000);
        const res = await engine.request('POST', '/v1/rollback', { key: t.key, body: { target: iso(target) } });
        expect(res.status, res.text).toBe(200);
        engine.clock.advance(1_000);
        const live = await liveStore(t);
        expect(sorted(live.memories), `round ${round}: live after rollback to ${iso(target)}`).toEqual(sorted(span.memories));
        expect(sorted(before.memories)).toEqual(sorted(span.memories));
        // The rollback is itself history: the snapshot now shows what it did, links included.
        const after = await snapshotAt(t, now().getTime(), 500);
        expect(sorted(after.memories)).toEqual(sorted(span.memories));
        expect([...after.edges].sort()).toEqual([...live.edges].sort());
        const settled = now().getTime();
        engine.clock.advance(2_000);
        spans.push({ from: settled, to: now().getTime(), memories: new Map(span.memories), edges: new Set(live.edges) });
      }
      await expectIntervalsRebuildTheSame(t);
    });
  }
});

/** After a rollback to `at`: the store holds exactly one link, the one the snapshot at `at` shows. */
async function expectOneLiveLinkAsAt(t: Tenant, at: number) {
  const then = await snapshotAt(t, at, 500);
  expect(then.edges.size).toBe(1);
  expect([...(await liveStore(t)).edges]).toEqual([...then.edges]);
}

describe('rollback and links', () => {
  // A memory that one rollback removes and a later rollback restores comes back with its links.
  it('a rollback to T restores the links that existed at T', async () => {
    const t = await engine.newTenant('pro');
    const store = (observation: string) => engine.request('POST', '/v1/memories', { key: t.key, body: { observation } });
    await store('The staging database runs Postgres 15 with pgvector.');
    engine.clock.advance(5_000);
    const t1 = now().getTime();
    engine.clock.advance(5_000);
    expect((await store('The staging database runs Postgres 15 with pgvector enabled.')).body.auto_links).toHaveLength(1);
    engine.clock.advance(5_000);
    const t2 = now().getTime();
    engine.clock.advance(5_000);
    expect((await engine.request('POST', '/v1/rollback', { key: t.key, body: { target: iso(t1) } })).body.operations_undone).toBe(1);
    engine.clock.advance(5_000);
    expect((await engine.request('POST', '/v1/rollback', { key: t.key, body: { target: iso(t2) } })).body.artifacts_restored).toBe(1);
    engine.clock.advance(5_000);
    await expectOneLiveLinkAsAt(t, t2);
  });
});

describe('links through rollbacks', () => {
  it('a rollback to T restores a link whose ends were removed one after the other after T', async () => {
    const t = await engine.newTenant('pro');
    const store = (observation: string) => engine.request('POST', '/v1/memories', { key: t.key, body: { observation } });
    const target = (await store('The staging database runs Postgres 15 with pgvector.')).body.id;
    engine.clock.advance(5_000);
    const beforeSource = now().getTime();
    engine.clock.advance(5_000);
    expect((await store('The staging database runs Postgres 15 with pgvector enabled.')).body.auto_links).toEqual([target]);
    engine.clock.advance(5_000);
    const linked = now().getTime();
    engine.clock.advance(5_000);
    expect((await engine.request('DELETE', `/v1/memories/${target}`, { key: t.key })).status).toBe(200);
    engine.clock.advance(5_000);
    // Removes the source (its link is already gone with the target) and restores the target.
    const first = await engine.request('POST', '/v1/rollback', { key: t.key, body: { target: iso(beforeSource) } });
    expect(first.body).toMatchObject({ operations_undone: 1, artifacts_restored: 1 });
    engine.clock.advance(5_000);
    expect((await engine.request('POST', '/v1/rollback', { key: t.key, body: { target: iso(linked) } })).body.artifacts_restored).toBe(1);
    engine.clock.advance(5_000);
    await expectOneLiveLinkAsAt(t, linked);
  });

  // The links a rollback puts back get `link` events, so the snapshots after it see them.
  it('the snapshot after a rollback shows the links it put back', async () => {
    const t = await engine.newTenant('pro');
    const store = (observation: string) => engine.request('POST', '/v1/memories', { key: t.key, body: { observation } });
    const target = (await store('The staging database runs Postgres 15 with pgvector.')).body.id;
    expect((await store('The staging database runs Postgres 15 with pgvector enabled.')).body.auto_links).toEqual([target]);
    engine.clock.advance(5_000);
    const linked = now().getTime();
    engine.clock.advance(5_000);
    expect((await engine.request('DELETE', `/v1/memories/${target}`, { key: t.key })).status).toBe(200);
    engine.clock.advance(5_000);
    expect((await engine.request('POST', '/v1/rollback', { key: t.key, body: { target: iso(linked) } })).body.artifacts_restored).toBe(1);
    engine.clock.advance(5_000);
    const live = await liveStore(t);
    expect(live.edges.size).toBe(1);
    expect([...(await snapshotAt(t, now().getTime(), 500)).edges]).toEqual([...live.edges]);
  });
});
