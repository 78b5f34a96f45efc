import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { embedAll } from '../shared/memory/embeddings';
import { embeddingOfState } from '../shared/memory/history';
import { createEngine, type Tenant, type TestEngine } from './harness';
import { replayHelpers } from './replay-helpers';

let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const { tick, now, iso, get, store, patch, del } = replayHelpers(() => engine);
/** The uuid a memory's URN names, as memory_events keeps it. */
const uuidOf = (urn: string) => urn.replace(/^urn:uuid:/, '');

interface EventRow {
  id: string;
  memory_id: string;
  kind: string;
  has_copy: boolean;
  embedding_live: boolean;
  observation: string | null;
  vector: string | null;
}

const events = (t: Tenant) =>
  engine.sql<EventRow>(sql`
    SELECT e.id::text, e.memory_id::text, e.kind, e.embedding IS NOT NULL AS has_copy, e.embedding_live,
           e.after->>'observation' AS observation, (${embeddingOfState('e')})::text AS vector
    FROM memory_events e WHERE e.tenant_id = ${t.tenantId} AND e.kind IN ('create', 'update', 'delete', 'rollback') ORDER BY e.id`);

/**
 * Every state's vector, wherever it is kept, is the embedding of that state's text, and a live
 * event's vector is its memory row's current one.
 */
async function expectExactHistory(t: Tenant) {
  const rows = await events(t);
  const states = rows.filter((r) => r.observation !== null);
  const expected = await embedAll(
    engine.node.services.embedder,
    states.map((r) => r.observation!),
  );
  states.forEach((r, i) => {
    const got = JSON.parse(r.vector!) as number[];
    const cosine = got.reduce((s, x, j) => s + x * expected[i][j], 0) / (Math.hypot(...got) * Math.hypot(...expected[i]));
    expect(cosine, `${r.kind} of ${r.memory_id}`).toBeGreaterThan(0.99999);
  });
  const [{ wrong }] = await engine.sql<{ wrong: number }>(sql`
    SELECT count(*)::int AS wrong FROM memory_events e LEFT JOIN memories m ON m.tenant_id = e.tenant_id AND m.id = e.memory_id
    WHERE e.tenant_id = ${t.tenantId} AND e.embedding_live AND (m.id IS NULL OR e.embedding IS NOT NULL)`);
  expect(wrong).toBe(0);
  return rows;
}

describe('memory_events keep no copy of a live vector', () => {
  it('a store leaves the vector in the row; a change, a delete and a rollback move it into the event first', async () => {
    const t = await engine.newTenant('pro');
    const a = (await store(t, { observation: 'Invoices go out in EUR.', auto_link: false })).body.id as string;
    const b = (await store(t, { observation: 'The office plant needs water on Mondays.', auto_link: false })).body.id as string;
    let rows = await expectExactHistory(t);
    expect(rows.map((r) => [r.kind, r.has_copy, r.embedding_live])).toEqual([
      ['create', false, true],
      ['create', false, true],
    ]);
    tick(10_000);
    const before = now();
    tick(10_000);

    // A tags-only change keeps the vector: the create event stays live, the update has none of its own.
    expect((await patch(t, a, { tags: ['billing'] })).status).toBe(200);
    rows = await expectExactHistory(t);
    expect(rows.filter((r) => r.memory_id === uuidOf(a)).map((r) => [r.kind, r.has_copy, r.embedding_live])).toEqual([
      ['create', false, true],
      ['update', false, true],
    ]);

    // A new text replaces the row's vector: the old one moves into the create event.
    expect((await patch(t, a, { observation: 'Invoices go out in USD.' })).status).toBe(200);
    expect((await del(t, b)).status).toBe(200);
    rows = await expectExactHistory(t);
    expect(rows.filter((r) => r.memory_id === uuidOf(a)).map((r) => [r.kind, r.has_copy, r.embedding_live])).toEqual([
      ['create', true, false],
      ['update', true, false],
      ['update', false, true],
    ]);
    expect(rows.find((r) => r.memory_id === uuidOf(b) && r.kind === 'create')).toMatchObject({ has_copy: true, embedding_live: false });

    // The past is searched with the vectors it had: B (deleted since) and A's old wording.
    const recall = await get(t, `/v1/replay/recall?q=${encodeURIComponent('Invoices go out in EUR.')}&at=${iso(before)}`);
    expect(recall.status).toBe(200);
    expect(recall.body.memories.map((r: { uuid: string }) => r.uuid).sort()).toEqual([a, b].sort());
    expect(recall.body.memories[0]).toMatchObject({ uuid: a, observation: 'Invoices go out in EUR.' });
    expect(recall.body.memories[0].similarity).toBeGreaterThan(0.999);

    tick(10_000);
    const rolled = await engine.request('POST', '/v1/rollback', { key: t.key, body: { target: iso(before) } });
    expect(rolled.status, rolled.text).toBe(200);
    await expectExactHistory(t);
    expect((await get(t, `/v1/memories/${a}`)).body).toMatchObject({ observation: 'Invoices go out in EUR.' });
    expect((await get(t, `/v1/memories/${b}`)).status).toBe(200);
  });

  it('an erasure removes the vector with the events and the row', async () => {
    const t = await engine.newTenant('pro');
    const a = (await store(t, { observation: 'The gate code is 4411.', auto_link: false })).body.id as string;
    expect((await patch(t, a, { observation: 'The gate code is 9120.' })).status).toBe(200);
    const erased = await engine.request('POST', '/v1/erasures', { key: t.key, body: { memory_ids: [a], reason: 'GDPR Art. 17 request' } });
    expect(erased.status, erased.text).toBeLessThan(300);
    const [{ n }] = await engine.sql<{ n: number }>(
      sql`SELECT count(*)::int AS n FROM memory_events WHERE tenant_id = ${t.tenantId} AND memory_id = ${uuidOf(a)}::uuid`,
    );
    expect(n).toBe(0);
  });
});
