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
