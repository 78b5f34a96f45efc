/**
 * Whole-account backup and restore, measured through the API (app.request, no sockets): N memories
 * stored through the batch path (100 a call), exported with GET /v1/export/bundle (the body streamed
 * to a file), then imported into an account of a second engram over an empty database with
 * POST /v1/import?format=bundle, the file streamed as the body; past 10,000 lines the import answers
 * 202 and the bench runs its job to the end. Time, memories/s, this process's CPU time and the peak
 * RSS of each step, in the same run. Embedded PGlite by default; DATABASE_URL (and REDIS_URL) to run
 * on Postgres, where the import gets a database of its own, created and dropped here.
 *
 * Not into a second tenant of the same database: its vectors would all be in the HNSW graph already
 * (the same texts, the same embeddings), and pgvector files an identical vector as one more heap row
 * of the element it finds instead of adding an element and rewriting its neighbours' lists, so that
 * import would skip most of what a store pays for. `--same-database` imports there all the same, to
 * show the difference.
 *   npx tsx test/bench/bundle.ts [--memories N] [--same-database]
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import pg from 'pg';
import { f0, f1, inProcessEngram, processCpu, table, timed } from './lib';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const MEMORIES = arg('memories', 10_000);
const SAME_DATABASE = process.argv.includes('--same-database');
const BATCH = 100;

/** `fn`'s result, wall time (ms), this process's CPU time (ms) and the highest RSS seen while it runs (sampled every 20 ms, MB). */
async function peakRss<T>(fn: () => Promise<T>): Promise<[T, number, number, number]> {
  let peak = process.memoryUsage().rss;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 20);
  try {
    const cpu = processCpu();
    const [value, ms] = await timed(fn);
    return [value, ms, processCpu() - cpu, Math.max(peak, process.memoryUsage().rss) / 1024 / 1024];
  } finally {
    clearInterval(timer);
  }
}

/** The engram the import goes into: over an empty database of its own (a fresh PGlite, or a Postgres database made for it). */
async function restoreEngram() {
  const url = process.env.DATABASE_URL;
  if (!url) return { ...(await inProcessEngram()), drop: async () => {} };
  const restoreUrl = new URL(url);
  const name = `${restoreUrl.pathname.slice(1)}_bundle_restore`;
  restoreUrl.pathname = `/${name}`;
  const admin = async (text: string) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(text).finally(() => client.end());
  };
  await admin(`DROP DATABASE IF EXISTS ${name}`);
  await admin(`CREATE DATABASE ${name}`);
  return { ...(await inProcessEngram({ DATABASE_URL: restoreUrl.toString() })), drop: () => admin(`DROP DATABASE IF EXISTS ${name}`) };
}

async function main() {
  const load = loadavg()[0];
  const { node, app, call, newTenant } = await inProcessEngram();
  const source = await newTenant();
  const text = (i: number) => `Customer ${i % 500} note ${i}: ordered item ${i % 97} on day ${i % 31}, shipped to warehouse ${i % 13}.`;

  const [, storeMs, storeCpu, storeRss] = await peakRss(async () => {
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
  const [, exportMs, exportCpu, exportRss] = await peakRss(async () => {
    const res = await app.request('/v1/export/bundle', { headers: { authorization: `Bearer ${source.api_key}` } });
    if (res.status !== 200 || !res.body) throw new Error(`export: ${res.status}`);
    const out = createWriteStream(path);
    for await (const chunk of res.body) if (!out.write(chunk)) await new Promise<void>((r) => out.once('drain', () => r()));
    out.end();
    await finished(out);
  });
  const bytes = (await stat(path)).size;
  const storage = node.services.storage;
  if (!SAME_DATABASE) await node.close();

  const restore = SAME_DATABASE ? { node, app, call, newTenant, drop: async () => {} } : await restoreEngram();
  const target = await restore.newTenant();
  type Import = { id: string; status: string; stored: { memory: number }; errors_total: number };
  const [summary, importMs, importCpu, importRss] = await peakRss(async () => {
    const res = await restore.app.request('/v1/import?format=bundle', {
      method: 'POST',
      headers: { authorization: `Bearer ${target.api_key}`, 'content-type': 'application/x-ndjson' },
      body: Readable.toWeb(createReadStream(path)),
      duplex: 'half',
    } as RequestInit);
    let body = (await res.json()) as Import;
    if (res.status !== 200 && res.status !== 202) throw new Error(`import: ${res.status} ${JSON.stringify(body)}`);
    while (body.status !== 'completed') {
      await restore.node.runner.drain();
      body = (await restore.call('GET', `/v1/imports/${body.id}`, target.api_key)) as Import;
    }
    return body;
  });
  await rm(dir, { recursive: true });
  if (summary.stored.memory !== MEMORIES) throw new Error(`expected ${MEMORIES} imported, got ${summary.stored.memory} (${summary.errors_total} errors)`);

  const rate = (ms: number) => f0(MEMORIES / (ms / 1000));
  console.log(`\n${MEMORIES} memories, ${storage} storage, bundle ${f1(bytes / 1024 / 1024)} MB, load average ${f1(load)} → ${f1(loadavg()[0])}\n`);
  console.log(
    table(
      ['step', 'time (s)', 'memories/s', 'CPU (s)', 'peak RSS (MB)'],
      [
        [`store (batch, ${BATCH} a call)`, f1(storeMs / 1000), rate(storeMs), f1(storeCpu / 1000), f0(storeRss)],
        ['export bundle (streamed)', f1(exportMs / 1000), rate(exportMs), f1(exportCpu / 1000), f0(exportRss)],
        [`import bundle (${SAME_DATABASE ? 'same database' : 'empty database'})`, f1(importMs / 1000), rate(importMs), f1(importCpu / 1000), f0(importRss)],
      ],
    ),
  );
  await restore.node.close();
  await restore.drop();
}

await main();
