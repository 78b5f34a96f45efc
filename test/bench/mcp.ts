/**
 * What MCP adds to a search: the `recall` tool through the official MCP client beside
 * `GET /v1/memories/search`, both over real HTTP to the same Node server, on the embedded default
 * (PGlite in this process, `memory://`, hash embedder so the database path is measured, not a model).
 *
 *   npm run bench:mcp -- [--memories 1000] [--calls 400]
 *
 * One tenant stores `--memories` memories (batches of 100), then the same query mix (semantic,
 * keyword and hybrid, with and without a tag filter) runs one call at a time: over HTTP with one
 * keep-alive connection, and through one connected MCP client (a tools/call per search). The two
 * alternate call by call. Prints p50 / p95 / p99, calls per second (of the time spent in that way's
 * calls) and this process's RSS for each, the difference and ratio of the p50s, and the median of
 * the per-call differences.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { listen } from '../../shared/node/http-server';
import { f1, f2, inProcessEngram, pct, rng, SMOKE, table } from './lib';

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

const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
const loadAtStart = load();
const engram = await inProcessEngram();
const tenant = await engram.newTenant('pro');
const { server } = await listen(engram.app.fetch, { host: '127.0.0.1', port: 0 });
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

// The same pseudo-words for stores and queries, so searches find something.
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

type Query = { q: string; mode: 'semantic' | 'keyword' | 'hybrid'; limit: number; tags?: string[] };
const MODES = ['semantic', 'keyword', 'hybrid'] as const;
const queries: Query[] = Array.from({ length: 200 }, (_, i) => ({
  q: phrase(1 + (i % 4)),
  mode: MODES[i % MODES.length],
  limit: 10,
  ...(i % 5 === 0 ? { tags: [TAGS[i % TAGS.length]] } : {}),
}));

async function http(query: Query) {
  const params = new URLSearchParams({ q: query.q, mode: query.mode, limit: String(query.limit) });
  if (query.tags) params.set('tags', query.tags.join(','));
  const res = await fetch(`${base}/v1/memories/search?${params}`, { headers: { authorization: `Bearer ${tenant.api_key}` } });
  const body = (await res.json()) as { memories?: unknown[] };
  if (res.status !== 200 || !Array.isArray(body.memories)) throw new Error(`search: ${res.status} ${JSON.stringify(body)}`);
}

const client = new Client({ name: 'engram-bench', version: '1.0.0' });
await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${tenant.api_key}` } } }));
async function mcp(query: Query) {
  const answer = (await client.callTool({ name: 'recall', arguments: { ...query } })) as { isError?: boolean; structuredContent?: { memories?: unknown[] } };
  if (answer.isError || !Array.isArray(answer.structuredContent?.memories)) throw new Error(`recall: ${JSON.stringify(answer)}`);
}

const ways = { 'GET /v1/memories/search (HTTP)': http, 'recall (MCP tools/call)': mcp } as const;
type Way = keyof typeof ways;
const results = new Map<Way, { ms: number[]; busy: number; rss: number }>();
for (const way of Object.keys(ways) as Way[]) {
  results.set(way, { ms: [], busy: 0, rss: 0 });
  for (let i = 0; i < WARMUP; i++) await ways[way](queries[i % queries.length]);
}
// The two alternate call by call, on the same query, so a change of machine load falls on both.
for (let i = 0; i < CALLS; i++) {
  for (const way of Object.keys(ways) as Way[]) {
    const r = results.get(way)!;
    const t0 = performance.now();
    await ways[way](queries[i % queries.length]);
    const ms = performance.now() - t0;
    r.ms.push(ms);
    r.busy += ms;
    if (i % 50 === 0) r.rss = Math.max(r.rss, process.memoryUsage().rss);
  }
}

const [httpResult, mcpResult] = [...results.values()];
const body = [...results.entries()].map(([way, r]) => [
  way,
  `${f2(pct(r.ms, 50))} / ${f2(pct(r.ms, 95))} / ${f2(pct(r.ms, 99))}`,
  f1((r.ms.length / r.busy) * 1000),
  f1(r.rss / 2 ** 20),
]);
const diff = pct(mcpResult.ms, 50) - pct(httpResult.ms, 50);
const ratio = pct(mcpResult.ms, 50) / pct(httpResult.ms, 50);
console.log(`\n### recall through MCP beside GET /v1/memories/search: ${MEMORIES} memories, ${httpResult.ms.length} calls each, one at a time\n`);
console.log(table(['way', 'p50 / p95 / p99 ms', 'calls/s', 'RSS MB (max)'], body));
// The query mix is several latency modes (semantic, keyword, hybrid): the p50 of each way can fall
// in a gap between them, so the median of the per-call differences (same query, back to back) says
// more steadily what MCP adds.
const paired = pct(
  mcpResult.ms.map((ms, i) => ms - httpResult.ms[i]),
  50,
);
console.log(`\nMCP at p50: +${f2(diff)} ms, ×${f2(ratio)}; median per-call difference (same query, back to back) +${f2(paired)} ms`);
console.log(`load average at start ${loadAtStart}, at end ${load()}`);
await client.close();
await new Promise((r) => (server as Server).close(r));
process.exit(0);
