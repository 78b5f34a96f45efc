/**
 * engram-sdk: its bundle size, and what `engram.memories.search` adds over a bare `fetch` of the
 * same URL, both over real HTTP to the same Node server on the embedded default (PGlite in this
 * process, `memory://`, hash embedder).
 *
 *   npm run bench:sdk -- [--memories 1000] [--calls 400]
 *
 * Size: sdk/src/index.ts bundled by esbuild (ESM, minified, its dependencies included) and that
 * gzipped (node:zlib, level 9). Time: one tenant stores `--memories` memories, then the same query
 * mix (semantic, keyword and hybrid, a fifth with a tag filter, top 10) runs one call at a time both
 * ways, alternating call by call on the same query: the SDK (URL building, headers, Idempotency-Key
 * logic, retry loop, JSON, typed result) and a bare fetch with the same headers reading the JSON.
 * Prints p50 / p95 / p99 of each, and the difference of the p50s and of the per-call medians.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { Engram } from '../../sdk/src/index';
import { listen } from '../../shared/node/http-server';
import { f2, inProcessEngram, pct, rng, SMOKE, table } from './lib';

const { values: args } = parseArgs({
  options: {
    memories: { type: 'string', default: '1000' },
    calls: { type: 'string', default: '400' },
  },
});
const MEMORIES = Number(args.memories);
const CALLS = Number(args.calls);
const WARMUP = SMOKE ? 3 : 30;
delete process.env.DATABASE_URL; // the embedded default, whatever the shell has
delete process.env.REDIS_URL;

const bundled = await build({
  entryPoints: [new URL('../../sdk/src/index.ts', import.meta.url).pathname],
  bundle: true,
  minify: true,
  format: 'esm',
  platform: 'neutral',
  target: 'es2022',
  write: false,
});
const code = bundled.outputFiles[0].contents;
const gzipped = gzipSync(code, { level: 9 }).length;

const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
const loadAtStart = load();
const engram = await inProcessEngram();
const tenant = await engram.newTenant('pro');
const { server } = await listen(engram.app.fetch, { host: '127.0.0.1', port: 0 });
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const random = rng(7);
const WORDS = Array.from({ length: 400 }, (_, i) => `w${i.toString(36)}${Math.floor(random() * 1e4).toString(36)}`);
const TAGS = ['billing', 'support', 'product', 'people', 'travel'];
const phrase = (n: number) => Array.from({ length: n }, () => WORDS[Math.floor(random() * WORDS.length)]).join(' ');
for (let i = 0; i < MEMORIES; i += 100) {
  const memories = Array.from({ length: Math.min(100, MEMORIES - i) }, (_, j) => ({
    observation: `Note ${i + j}: ${phrase(12)}`,
    tags: [TAGS[(i + j) % TAGS.length]],
  }));
  await engram.call('POST', '/v1/memories/batch', tenant.api_key, { memories });
}
await engram.node.runner.maintain(); // what the service does at start (ANALYZE on PGlite)

type Query = { q: string; mode: 'semantic' | 'keyword' | 'hybrid'; limit: number; tags?: string };
const MODES = ['semantic', 'keyword', 'hybrid'] as const;
const queries: Query[] = Array.from({ length: 200 }, (_, i) => ({
  q: phrase(1 + (i % 4)),
  mode: MODES[i % MODES.length],
  limit: 10,
  ...(i % 5 === 0 ? { tags: TAGS[i % TAGS.length] } : {}),
}));

const headers = { accept: 'application/json', authorization: `Bearer ${tenant.api_key}` };
async function bare(query: Query) {
  const res = await fetch(`${base}/v1/memories/search?${new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]))}`, {
    method: 'GET',
    headers,
  });
  const body = (await res.json()) as { memories?: unknown[] };
  if (res.status !== 200 || !Array.isArray(body.memories)) throw new Error(`search: ${res.status}`);
}
const client = new Engram({ apiKey: tenant.api_key, baseUrl: base });
async function sdk(query: Query) {
  const body = await client.memories.search(query);
  if (!Array.isArray(body.memories)) throw new Error('search: no memories');
}

const ways = { 'bare fetch': bare, 'engram.memories.search': sdk } as const;
type Way = keyof typeof ways;
const results = new Map<Way, number[]>();
for (const way of Object.keys(ways) as Way[]) {
  results.set(way, []);
  for (let i = 0; i < WARMUP; i++) await ways[way](queries[i % queries.length]);
}
for (let i = 0; i < CALLS; i++) {
  for (const way of Object.keys(ways) as Way[]) {
    const t0 = performance.now();
    await ways[way](queries[i % queries.length]);
    results.get(way)!.push(performance.now() - t0);
  }
}

const [bareMs, sdkMs] = [...results.values()];
console.log(`\n### engram-sdk: bundle ${(code.length / 1024).toFixed(1)} KiB minified, ${(gzipped / 1024).toFixed(1)} KiB gzipped`);
console.log(`\n### memories.search beside a bare fetch: ${MEMORIES} memories, ${CALLS} calls each, one at a time\n`);
console.log(
  table(
    ['way', 'p50 / p95 / p99 ms'],
    [...results.entries()].map(([way, ms]) => [way, `${f2(pct(ms, 50))} / ${f2(pct(ms, 95))} / ${f2(pct(ms, 99))}`]),
  ),
);
const paired = pct(
  sdkMs.map((ms, i) => ms - bareMs[i]),
  50,
);
console.log(
  `\nSDK at p50 ${f2(pct(sdkMs, 50) - pct(bareMs, 50))} ms, p95 ${f2(pct(sdkMs, 95) - pct(bareMs, 95))} ms, p99 ${f2(pct(sdkMs, 99) - pct(bareMs, 99))} ms; median per-call difference ${f2(paired)} ms`,
);
console.log(`load average at start ${loadAtStart}, at end ${load()}`);
await new Promise((r) => (server as Server).close(r));
process.exit(0);
