import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_MEM0_ITEM_BYTES } from '../functions/portability/mem0';
import { LineErrors, parseBody, type Record_ } from '../functions/portability/parse';
import { createEngine, type TestEngine } from './harness';

/**
 * POST /v1/import?format=mem0 (docs/portability.md#limits): a mem0 export is one JSON document, read
 * as a stream item by item, with a turn of the event loop between slices, so a large file neither
 * holds the whole file in memory nor holds up the requests of other accounts while it is read.
 */
let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(async () => {
  await engine.close();
});

/** `count` mem0 items without ids (their source id is a hash of the text), as `{"results": [...]}` bytes. */
function mem0File(count: number, item: (i: number) => Record<string, unknown> = (i) => ({ memory: `Fact number ${i}: ${'x'.repeat(80)}`, user_id: 'alice' })) {
  const items = Array.from({ length: count }, (_, i) => JSON.stringify(item(i)));
  return new TextEncoder().encode(`{"results": [${items.join(',')}], "total": ${count}}\n`);
}

/** `bytes` as a stream of `chunk`-sized pieces; `onStart` runs when the first is taken, `onEnd` when the last one has been. */
function streamOf(bytes: Uint8Array, chunk: number, onEnd: () => void = () => {}, onStart: () => void = () => {}) {
  let at = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at === 0) onStart();
      if (at >= bytes.byteLength) {
        onEnd();
        controller.close();
        return;
      }
      controller.enqueue(bytes.slice(at, at + chunk));
      at += chunk;
    },
  });
}

const MB = 1024 * 1024;

describe('a mem0 file is read as a stream', () => {
  it('hands its items over while the body is still arriving', async () => {
    const file = mem0File(5_000);
    let bodyEnded = false;
    const batchesBeforeEnd: number[] = [];
    const lines: number[] = [];
    const parsed = await parseBody(
      streamOf(file, 16 * 1024, () => (bodyEnded = true)),
      'mem0',
      100 * MB,
      new LineErrors(),
      async (records: Record_[]) => {
        if (!bodyEnded) batchesBeforeEnd.push(records.length);
        lines.push(...records.map((r) => r.line));
      },
    );
    expect(parsed.lines).toBe(5_000);
    expect(lines).toEqual(Array.from({ length: 5_000 }, (_, i) => i + 1));
    expect(batchesBeforeEnd.length).toBeGreaterThan(1);
  });

  it('stops for a turn of the event loop between slices, even when the whole file arrives at once', async () => {
    const file = mem0File(20_000);
    expect(file.byteLength).toBeGreaterThan(2 * MB);
    let turns = 0;
    let reading = true;
    const turn = () => {
      turns += 1;
      if (reading) setImmediate(turn);
    };
    setImmediate(turn);
    const turnsAtBatch: number[] = [];
    await parseBody(streamOf(file, file.byteLength), 'mem0', 100 * MB, new LineErrors(), async () => {
      turnsAtBatch.push(turns);
    });
    reading = false;
    expect(turnsAtBatch.length).toBeGreaterThan(10);
    // Turns of the event loop passed between the batches, not only after the last one.
    expect(turnsAtBatch[0]).toBeLessThan(turnsAtBatch[turnsAtBatch.length - 1]);
    expect(new Set(turnsAtBatch).size).toBeGreaterThan(turnsAtBatch.length / 2);
  });

  it('refuses a file with an item over 1 MiB, or a bulk that is not the items, instead of buffering it', async () => {
    const t = await engine.newTenant('pro');
    const huge = 'y'.repeat(MAX_MEM0_ITEM_BYTES + 1024);
    for (const file of [JSON.stringify([{ memory: 'small' }, { memory: huge }]), JSON.stringify({ padding: [huge], results: [{ memory: 'small' }] })]) {
      const res = await engine.request('POST', '/v1/import?format=mem0&dry_run=true', {
        key: t.key,
        raw: file,
        headers: { 'content-type': 'application/x-ndjson' },
      });
      expect(res.status, res.text).toBe(400);
      expect(res.text).toContain('larger than');
    }
  });

  it('a multi-MB mem0 import through the route: other work gets turns of the event loop while it is read', async () => {
    const importer = await engine.newTenant('pro');
    // Refused items never reach the store: all the import does after the body is in is reading it.
    const file = mem0File(30_000, (i) => ({ memory: i, note: `Not a memory ${'z'.repeat(80)}` }));
    expect(file.byteLength).toBeGreaterThan(3 * MB);
    let turns = 0;
    let turnsAtStart = 0;
    let reading = true;
    const turn = () => {
      turns += 1;
      if (reading) setImmediate(turn);
    };
    setImmediate(turn);
    const body = streamOf(
      file,
      file.byteLength, // all at once: the worst case, nothing to wait for between slices
      () => {},
      () => {
        turnsAtStart = turns;
      },
    );
    const res = await engine.app.fetch(
      new Request('http://localhost/v1/import?format=mem0&dry_run=true', {
        method: 'POST',
        headers: { authorization: `Bearer ${importer.key}`, 'content-type': 'application/x-ndjson' },
        body,
        duplex: 'half',
      } as RequestInit),
    );
    reading = false;
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ dry_run: true, lines: 30_000, valid: 0, errors_total: 30_000 });
    expect(turns - turnsAtStart).toBeGreaterThan(30_000 / 1_000);
  });
});

describe('a mem0 export keeps its dates, expiries, runs and relations', () => {
  const req = (method: 'GET' | 'POST', path: string, opts: Record<string, unknown>) => engine.request<any>(method, path, opts as never);
  const day = 24 * 3_600_000;
  const file = (now: Date) =>
    JSON.stringify({
      results: [
        {
          id: 'm-1',
          memory: 'Alice lives in Seattle',
          user_id: 'alice',
          run_id: 'onboarding-7',
          created_at: '2024-07-20T01:41:05.123456-07:00',
          updated_at: '2024-08-01T10:00:00.000000-07:00',
          metadata: { source: 'chat' },
        },
        { id: 'm-2', memory: 'Alice works as a software engineer', user_id: 'alice', created_at: '2024-07-21T09:00:00' },
        { id: 'm-3', memory: 'Alice had a dentist appointment', user_id: 'alice', created_at: '2024-06-01T00:00:00Z', deleted_at: '2024-06-02T00:00:00Z' },
        { id: 'm-4', memory: 'Alice is on call this week', user_id: 'alice', expiration_date: new Date(now.getTime() - day).toISOString() },
        { id: 'm-5', memory: 'Alice is travelling next month', user_id: 'alice', expiration_date: new Date(now.getTime() + 200 * day).toISOString() },
      ],
      relations: [
        { source: 'alice', source_type: 'person', relationship: 'lives_in', target: 'seattle', target_type: 'city', score: 0.9 },
        { source: 'alice', relationship: 'works_as', destination: 'software engineer' },
      ],
    });
  const importMem0 = (t: { key: string }, raw: string) =>
    req('POST', '/v1/import?format=mem0', { key: t.key, raw, headers: { 'content-type': 'application/json' } });

  it('created_at becomes occurred_at, expiration_date expires_at, run_id a tag; deleted and expired items are skipped and counted; relations become triples', async () => {
    const t = await engine.newTenant('pro');
    const res = await importMem0(t, file(engine.clock.now()));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ stored: { memory: 3, triple: 2 }, skipped: { deleted: 1, expired: 1, relation: 0 }, errors_total: 0 });
    const list = await req('GET', '/v1/memories?limit=10', { key: t.key });
    const byText = new Map((list.body.memories as { observation: string }[]).map((m) => [m.observation, m as Record<string, unknown>]));
    expect(byText.get('Alice lives in Seattle')).toMatchObject({ occurred_at: '2024-07-20T08:41:05.123Z', tags: ['user:alice', 'run:onboarding-7'] });
    expect(byText.get('Alice works as a software engineer')).toMatchObject({ occurred_at: '2024-07-21T09:00:00.000Z' });
    expect(byText.get('Alice is travelling next month')?.expires_at).toBeTruthy();
    expect(byText.has('Alice had a dentist appointment')).toBe(false);
    expect(byText.has('Alice is on call this week')).toBe(false);
    const triples = await req('GET', '/v1/knowledge/triples?subject=alice', { key: t.key });
    expect(triples.status, triples.text).toBe(200);
    expect(JSON.stringify(triples.body)).toContain('lives_in');
    // Again: nothing new.
    const again = await importMem0(t, file(engine.clock.now()));
    expect(again.body).toMatchObject({ stored: { memory: 0, triple: 0 }, already_imported: 5 });

    // Event-time filters see the dates mem0 had; as_of answers what the store held before the import.
    const window = await req('GET', '/v1/memories?occurred_before=2024-12-31T00:00:00Z', { key: t.key });
    expect(window.body.total).toBe(2);
    engine.clock.advance(day);
    const past = await req(
      'GET',
      `/v1/memories/search?q=Seattle&mode=hybrid&as_of=${encodeURIComponent(new Date(engine.clock.now().getTime() - 2 * day).toISOString())}`,
      { key: t.key },
    );
    expect(past.status, past.text).toBe(200);
    expect(past.body.total_results).toBe(0);
    const yesterday = await req('GET', '/v1/memories/search?q=Seattle&mode=hybrid&as_of=1%20hour%20ago', { key: t.key });
    expect(yesterday.body.memories[0]).toMatchObject({ observation: 'Alice lives in Seattle', occurred_at: '2024-07-20T08:41:05.123Z' });
  });

  it('a tier without the knowledge graph skips the relations and counts them', async () => {
    const t = await engine.newTenant('free');
    const res = await importMem0(t, file(engine.clock.now()));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ stored: { memory: 3, triple: 0 }, skipped: { deleted: 1, expired: 1, relation: 2 }, errors_total: 0 });
  });
});
