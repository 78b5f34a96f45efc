/**
 * Whole-account backup and restore, measured through the API (app.request, no sockets): N memories
 * stored through the batch path (100 a call), exported with GET /v1/export/bundle (the body streamed
 * to a file), then imported into another account with POST /v1/import?format=bundle, the file
 * streamed as the body; past 10,000 lines the import answers 202 and the bench runs its job to the
 * end. Time, memories/s and the peak RSS of each step, in the same run. Embedded PGlite by default;
 * DATABASE_URL (and REDIS_URL) to run on Postgres.
 *   npx tsx test/bench/bundle.ts [--memories N]
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { f0, f1, inProcessEngram, table, timed } from './lib';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const MEMORIES = arg('memories', 10_000);
const BATCH = 100;

/** The highest RSS seen while `fn` runs, sampled every 20 ms, in MB. */
async function peakRss<T>(fn: () => Promise<T>): Promise<[T, number, number]> {
  let peak = process.memoryUsage().rss;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 20);
  try {
    const [value, ms] = await timed(fn);
    return [value, ms, Math.max(peak, process.memoryUsage().rss) / 1024 / 1024];
  } finally {
    clearInterval(timer);
  }
}

async function main() {
  const { node, app, call, newTenant } = await inProcessEngram();
  const source = await newTenant();
  const target = await newTenant();
  const text = (i: number) => `Customer ${i % 500} note ${i}: ordered item ${i % 97} on day ${i % 31}, shipped to warehouse ${i % 13}.`;

  const [, storeMs, storeRss] = await peakRss(async () => {
    for (let i = 0; i < MEMORIES; i += BATCH) {
      const memories = Array.from({ length: Math.min(BATCH, MEMORIES - i) }, (_, j) => ({
        observation: text(i + j),
        tags: ['bench', `c:${(i + j) % 500}`],
        auto_link: false,
      }));
      await call('POST', '/v1/memories/batch', source.api_key, { memories });
    }
  });

  const dir = await mkdtemp(join(tmpdir(), 'engram-bundle-'));
  const path = join(dir, 'bundle.jsonl');
  const [, exportMs, exportRss] = await peakRss(async () => {
    const res = await app.request('/v1/export/bundle', { headers: { authorization: `Bearer ${source.api_key}` } });
    if (res.status !== 200 || !res.body) throw new Error(`export: ${res.status}`);
    const out = createWriteStream(path);
    for await (const chunk of res.body) if (!out.write(chunk)) await new Promise<void>((r) => out.once('drain', () => r()));
    out.end();
    await finished(out);
  });
  const bytes = (await stat(path)).size;

  type Import = { id: string; status: string; stored: { memory: number }; errors_total: number };
  const [summary, importMs, importRss] = await peakRss(async () => {
    const res = await app.request('/v1/import?format=bundle', {
      method: 'POST',
      headers: { authorization: `Bearer ${target.api_key}`, 'content-type': 'application/x-ndjson' },
      body: Readable.toWeb(createReadStream(path)),
      duplex: 'half',
    } as RequestInit);
    let body = (await res.json()) as Import;
    if (res.status !== 200 && res.status !== 202) throw new Error(`import: ${res.status} ${JSON.stringify(body)}`);
    while (body.status !== 'completed') {
      await node.runner.drain();
      body = (await call('GET', `/v1/imports/${body.id}`, target.api_key)) as Import;
    }
    return body;
  });
  await rm(dir, { recursive: true });
  if (summary.stored.memory !== MEMORIES) throw new Error(`expected ${MEMORIES} imported, got ${summary.stored.memory} (${summary.errors_total} errors)`);

  const rate = (ms: number) => f0(MEMORIES / (ms / 1000));
  console.log(`\n${MEMORIES} memories, ${node.services.storage} storage, bundle ${f1(bytes / 1024 / 1024)} MB\n`);
  console.log(
    table(
      ['step', 'time (s)', 'memories/s', 'peak RSS (MB)'],
      [
        [`store (batch, ${BATCH} a call)`, f1(storeMs / 1000), rate(storeMs), f0(storeRss)],
        ['export bundle (streamed)', f1(exportMs / 1000), rate(exportMs), f0(exportRss)],
        ['import bundle', f1(importMs / 1000), rate(importMs), f0(importRss)],
      ],
    ),
  );
  await node.close();
}

await main();
