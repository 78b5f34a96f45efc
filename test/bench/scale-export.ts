/**
 * Export of one large tenant on PostgreSQL: the whole-account bundle (`GET /v1/export/bundle`,
 * JSONL with a SHA-256 trailer) beside the memories' JSON export
 * (`GET /v1/memories/export?format=json`), in the same run, over HTTP from `functions/node.ts` in a
 * child process, so the RSS is the server's alone.
 *
 *   DATABASE_URL=postgres://.../engram_export REDIS_URL=redis://... npx tsx test/bench/scale-export.ts
 *     [--memories 250000] [--runs 2]
 *
 * DATABASE_URL must be a database of its own with no memories (drop it afterwards). The tenant is
 * bulk-loaded with SQL as bench:scale loads it (memories and their `create` events, the vectors the
 * hash embedder computes), with the GIN indexes dropped during the load and rebuilt after it; the
 * HNSW index is left dropped, as neither export reads it. Then the two exports in turn, `--runs`
 * times each; each body is read as a stream and counted, the bundle's trailer checked against the
 * SHA-256 of the bytes before it. The server's peak RSS is set back before each export, so its peak
 * is that export's.
 */
import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { f0, f1, indexDefinition, rng, table, timed } from './lib';
import { bulkLoad, countLoaded, createTenant, load, type Server, startServer } from './scale-lib';

const { values: args } = parseArgs({
  options: { memories: { type: 'string', default: '250000' }, runs: { type: 'string', default: '2' } },
});
const MEMORIES = Number(args.memories);
const RUNS = Number(args.runs);
if (!(MEMORIES > 0) || !(RUNS > 0)) throw new Error('--memories and --runs must be positive');
const DATABASE_URL = process.env.DATABASE_URL;
if (!DATABASE_URL) throw new Error('DATABASE_URL: a database of its own for this bench');
/** Dropped during the load: an index insert per row costs more than the row. */
const LOAD_INDEXES = ['memories_embedding_idx', 'memories_tsv_idx', 'memories_tags_idx'];
const REBUILT = ['memories_tsv_idx', 'memories_tags_idx'];

const db = new pg.Client({ connectionString: DATABASE_URL });
const q = async <T = Record<string, any>>(text: string, params?: unknown[]) => (await db.query(text, params)).rows as T[];

interface Measured {
  seconds: number;
  bytes: number;
  lines: number;
  before: number;
  after: number;
  peak: number;
  load: string;
}

/** One export read to its end as a stream: bytes, lines, time, the server's RSS around it. */
async function exportOnce(server: Server, key: string, path: string, bundle: boolean): Promise<Measured> {
  await server.resetPeak();
  const before = await server.rss();
  const digest = createHash('sha256');
  let bytes = 0;
  let lines = 0;
  let tail = '';
  const decoder = new TextDecoder();
  const [, ms] = await timed(async () => {
    const res = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
    if (!res.ok) throw new Error(`${path}: ${res.status} ${(await res.text()).slice(0, 300)}`);
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      bytes += chunk.length;
      for (let at = chunk.indexOf(10); at >= 0; at = chunk.indexOf(10, at + 1)) lines++;
      if (bundle) {
        // Everything before the trailer line goes into the digest; the last line is kept aside until the end.
        const text = tail + decoder.decode(chunk, { stream: true });
        const cut = text.lastIndexOf('\n', text.length - 2);
        if (cut >= 0) digest.update(text.slice(0, cut + 1));
        tail = cut >= 0 ? text.slice(cut + 1) : text;
      }
    }
  });
  const after = await server.rss();
  if (bundle) {
    const t = JSON.parse(tail) as { type: string; lines: number; sha256: string };
    const ok = t.type === 'trailer' && t.sha256 === digest.digest('hex') && t.lines === lines - 1;
    if (!ok) throw new Error(`bundle trailer does not match: ${tail.slice(0, 200)}`);
  }
  return { seconds: ms / 1000, bytes, lines, before: before.rss, after: after.rss, peak: after.peak, load: load() };
}

const started = performance.now();
await db.connect();
const server = await startServer({ DATABASE_URL, REDIS_URL: process.env.REDIS_URL });
try {
  const [{ n }] = await q<{ n: string }>('SELECT count(*) AS n FROM memories');
  if (Number(n) > 0) throw new Error(`refusing to run: memories holds ${n} rows; the bench drops its indexes. Use a database of its own.`);
  console.log(`engram export bench: ${MEMORIES.toLocaleString('en')} memories, ${RUNS} runs each; load average ${load()} at start`);
  const big = await createTenant(server.url, 'export');
  await q(`DROP INDEX IF EXISTS ${LOAD_INDEXES.join(', ')}`);
  const [, loadMs] = await timed(() => bulkLoad(q, MEMORIES, () => big.tenantId, rng(42)));
  await countLoaded(q, [big.tenantId], MEMORIES);
  for (const name of REBUILT) await q(await indexDefinition(name));
  await q('VACUUM ANALYZE memories, memory_events, memory_postings');
  console.error(`  loaded ${MEMORIES} in ${f1(loadMs / 1000)} s (load ${load()})`);

  const kinds = [
    { label: 'GET /v1/memories/export?format=json', path: '/v1/memories/export?format=json', bundle: false },
    { label: 'GET /v1/export/bundle', path: '/v1/export/bundle', bundle: true },
  ];
  const out: string[][] = [];
  for (let r = 0; r < RUNS; r++)
    for (const k of kinds) {
      const m = await exportOnce(server, big.key, k.path, k.bundle);
      console.error(`  ${k.label}: ${f1(m.seconds)} s, ${m.lines} lines, RSS ${m.before} → peak ${m.peak} (load ${m.load})`);
      out.push([
        k.label,
        String(r + 1),
        f1(m.seconds),
        f0(MEMORIES / m.seconds),
        f1(m.bytes / 2 ** 20),
        m.lines.toLocaleString('en'),
        `${m.before} / ${m.peak} / ${m.after}`,
        m.load,
      ]);
    }
  console.log(`\n### Export of one tenant of ${MEMORIES.toLocaleString('en')} memories, streamed over HTTP\n`);
  console.log(table(['export', 'run', 'seconds', 'memories/s', 'MB', 'lines', 'server RSS before / peak / after MB', 'load average'], out));
  console.log(`\nbundle trailers: SHA-256 and line count match in every run; bulk load ${f0(MEMORIES / (loadMs / 1000))} rows/s`);
  console.log(`total ${f1((performance.now() - started) / 60_000)} min; load average at the end ${load()}`);
} finally {
  await server.stop();
  await db.end();
}
process.exit(0);
