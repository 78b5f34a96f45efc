/**
 * Stores and searches on the embedded default (PGlite in this process, `memory://`), through the
 * HTTP app in process, with the hash embedder (so the database path, not the model, is measured).
 *
 *   npm run bench:embedded -- [--stores 1200] [--searches 100] [--auto-link] --data <dir of LoCoMo json files, or LOCOMO_DATA>
 *
 * LoCoMo turns of three conversations are stored one at a time (tagged with their conversation),
 * then (after a maintenance run, as the service makes one at start and every 15 minutes) the
 * questions search them one at a time: semantic within the question's conversation (a tag
 * filter) and over the whole store, keyword and hybrid over the whole store and hybrid within the
 * conversation (top 10). Prints p50 / p95 / p99 ms and this process's CPU per call (PGlite runs in
 * it, so that is the database's CPU too). Compare two versions of the code by running each, in
 * turn, on the same machine.
 */
import { readdir, readFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { f2, inProcessEngram, pct, processCpu, SMOKE, table } from './lib';

const { values: args } = parseArgs({
  options: {
    stores: { type: 'string', default: '1200' },
    searches: { type: 'string', default: '100' },
    'auto-link': { type: 'boolean', default: false },
    data: { type: 'string', default: process.env.LOCOMO_DATA ?? '' },
  },
});
if (!args.data) throw new Error('pass the LoCoMo data directory: --data <dir> or LOCOMO_DATA');
const STORES = Number(args.stores);
const SEARCHES = Number(args.searches);
const WARMUP = SMOKE ? 2 : 10;
delete process.env.DATABASE_URL; // the embedded default, whatever the shell has
delete process.env.REDIS_URL;

const turns: { conv: string; text: string }[] = [];
const questions: { conv: string; q: string }[] = [];
for (const f of (await readdir(args.data)).filter((f) => ['26.json', '30.json', '41.json'].includes(f)).sort()) {
  const raw = JSON.parse(await readFile(join(args.data, f), 'utf8')) as Record<string, any>;
  const conv = `conv-${f.replace('.json', '')}`;
  for (const k of Object.keys(raw).filter((k) => /^session_\d+$/.test(k))) {
    for (const t of raw[k] as { speaker: string; text: string }[]) turns.push({ conv, text: `${t.speaker}: ${t.text}` });
  }
  for (const qa of raw.qa as { question: string; category: number }[]) if (qa.category >= 1 && qa.category <= 4) questions.push({ conv, q: qa.question });
}
if (!turns.length || !questions.length) throw new Error(`no LoCoMo conversations 26, 30, 41 in ${args.data}`);

const loadAtStart = loadavg()
  .map((x) => x.toFixed(2))
  .join(' ');
const engram = await inProcessEngram();
const tenant = await engram.newTenant();

/** Latencies (after the warm-up) and CPU per call of `n` sequential calls of `call(i)`. */
async function measure(n: number, call: (i: number) => Promise<unknown>) {
  const ms: number[] = [];
  for (let i = 0; i < WARMUP; i++) await call(i);
  const cpu = processCpu();
  for (let i = 0; i < n; i++) {
    const start = performance.now();
    await call(WARMUP + i);
    ms.push(performance.now() - start);
  }
  return [`${f2(pct(ms, 50))} / ${f2(pct(ms, 95))} / ${f2(pct(ms, 99))}`, f2((processCpu() - cpu) / n)];
}

const body: string[][] = [];
body.push([
  `store (auto_link ${args['auto-link'] ? 'on' : 'off'})`,
  ...(await measure(STORES, (i) => {
    const t = turns[i % turns.length];
    return engram.call('POST', '/v1/memories', tenant.api_key, { observation: `${t.text} #${i}`, tags: [t.conv], auto_link: args['auto-link'] });
  })),
]);
// What the service's maintenance does at start and every 15 minutes (on PGlite: ANALYZE, no autovacuum there).
await engram.node.runner.maintain();
const searches: [string, (q: { conv: string }) => string][] = [
  ['semantic search, one conversation', (q) => `mode=semantic&tags=${q.conv}`],
  ['semantic search, whole store', () => 'mode=semantic'],
  ['keyword search, whole store', () => 'mode=keyword'],
  ['hybrid search, whole store', () => 'mode=hybrid'],
  ['hybrid search, one conversation', (q) => `mode=hybrid&tags=${q.conv}`],
];
for (const [label, filter] of searches) {
  body.push([
    label,
    ...(await measure(SEARCHES, (i) => {
      const q = questions[i % questions.length];
      return engram.call('GET', `/v1/memories/search?q=${encodeURIComponent(q.q)}&limit=10&${filter(q)}`, tenant.api_key);
    })),
  ]);
}

console.log(`\n### The embedded default (PGlite in process, hash embedder): ${STORES} stores, then ${SEARCHES} searches of each kind, one at a time\n`);
console.log(table(['call', 'p50 / p95 / p99 ms', 'CPU ms per call (this process, PGlite included)'], body));
console.log(
  `\nload average at start ${loadAtStart}, at end ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
process.exit(0);
