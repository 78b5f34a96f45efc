/**
 * The worker as Cloudflare runs it (workerd, through wrangler's `unstable_dev`), on Postgres through
 * the Neon WebSocket stand-in and on Redis through the Upstash REST stand-in, with a latency added
 * to every round trip to Postgres for the hop from a Worker to Neon.
 *
 *   DATABASE_URL=postgres://... REDIS_URL=redis://... npm run bench:workers -- [--stores 150] [--searches 150] [--latency 0,5]
 *
 * For each added latency: stores (hash embedder, auto_link off), semantic searches and the
 * authenticated, counted `GET /v1/usage` (what every request pays) one at a time; p50 / p95 / p99
 * ms, the messages the driver sent Postgres per request (each waits for its answer, so about one
 * round trip) and the connections it opened (a request's pool is its own, so each connects afresh:
 * a WebSocket and PostgreSQL's startup).
 * Beside them, in the same run: a bare round trip through the same stand-in (`SELECT 1` from Node
 * with Neon's driver on an open connection), the unit each message costs.
 *
 * The worker's database is a fresh `engram_bench_workers` on the server of DATABASE_URL.
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { neonConfig, Pool } from '@neondatabase/serverless';
import pg from 'pg';
import { unstable_dev } from 'wrangler';
import ws from 'ws';
import { openPostgres } from '../../shared/node/database';
import { startNeonWsProxy } from '../standins/neon-ws-proxy';
import { startUpstashProxy } from '../standins/upstash-redis-proxy';
import { BENCH_ADMIN_TOKEN, f1, pct, SMOKE, table } from './lib';

const { values: args } = parseArgs({
  options: {
    stores: { type: 'string', default: '150' },
    searches: { type: 'string', default: '150' },
    latency: { type: 'string', default: '0,5' },
  },
});
const STORES = Number(args.stores);
const SEARCHES = Number(args.searches);
const LATENCIES = args.latency.split(',').map(Number);
const WARMUP = SMOKE ? 2 : 20;
if (!process.env.DATABASE_URL || !process.env.REDIS_URL) throw new Error('set DATABASE_URL and REDIS_URL (bash .ci/services.sh prints them)');

const server = new URL(process.env.DATABASE_URL);
const databaseUrl = Object.assign(new URL(server), { pathname: '/engram_bench_workers' }).toString();
{
  const admin = new pg.Client({ connectionString: server.toString() });
  await admin.connect();
  await admin.query('DROP DATABASE IF EXISTS engram_bench_workers WITH (FORCE)');
  await admin.query('CREATE DATABASE engram_bench_workers');
  await admin.end();
  const database = openPostgres(databaseUrl, 1);
  await database.migrate();
  await database.close();
}
const upstashToken = `upstash-${crypto.randomUUID()}`;
const upstash = await startUpstashProxy({ redisUrl: process.env.REDIS_URL, token: upstashToken });
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
const loadAtStart = load();

const rows: string[][] = [];
for (const latencyMs of LATENCIES) {
  const proxy = await startNeonWsProxy({ latencyMs });
  const worker = await unstable_dev('functions/worker.ts', {
    config: 'wrangler.toml',
    local: true,
    logLevel: 'none',
    vars: {
      DATABASE_URL: databaseUrl,
      NEON_WS_PROXY: `127.0.0.1:${proxy.port}`,
      UPSTASH_REDIS_REST_URL: upstash.url,
      UPSTASH_REDIS_REST_TOKEN: upstashToken,
      ADMIN_TOKEN: BENCH_ADMIN_TOKEN,
      EMBEDDING_PROVIDER: 'hash',
      RATE_LIMIT_SCALE: '1000',
      LOG_LEVEL: 'silent',
    },
    experimental: { disableExperimentalWarning: true, testMode: true },
  });
  try {
    const call = async (method: string, path: string, key: string, body?: unknown) => {
      const res = await worker.fetch(path, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const json = (await res.json()) as any;
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
      return json;
    };
    const { api_key: key } = await call('POST', '/admin/v1/tenants', BENCH_ADMIN_TOKEN, {
      email: `bench-workers-${Date.now()}@example.com`,
      tier: 'enterprise',
    });
    const measure = async (n: number, request: (i: number) => Promise<unknown>) => {
      for (let i = 0; i < WARMUP; i++) await request(-1 - i);
      const ms: number[] = [];
      const [sent, opened] = [proxy.sent(), proxy.opened()];
      for (let i = 0; i < n; i++) {
        const t0 = performance.now();
        await request(i);
        ms.push(performance.now() - t0);
      }
      return { ms, messages: (proxy.sent() - sent) / n, connections: (proxy.opened() - opened) / n };
    };
    const stores = await measure(STORES, (i) =>
      call('POST', '/v1/memories', key, { observation: `bench memory ${i} at latency ${latencyMs}: topic ${i % 13}`, tags: ['bench'], auto_link: false }),
    );
    const usage = await measure(SEARCHES, () => call('GET', '/v1/usage', key));
    const searches = await measure(SEARCHES, (i) =>
      call('GET', `/v1/memories/search?${new URLSearchParams({ q: `topic ${Math.abs(i) % 13}`, mode: 'semantic', limit: '10' })}`, key),
    );

    // The unit: one round trip on an open connection of Neon's driver, through the same stand-in.
    neonConfig.webSocketConstructor = ws;
    neonConfig.wsProxy = (host, port) => `127.0.0.1:${proxy.port}/v1?address=${host}:${port}`;
    Object.assign(neonConfig, { useSecureWebSocket: false, pipelineTLS: false, pipelineConnect: false });
    const bare = new Pool({ connectionString: databaseUrl, max: 1 });
    const client = await bare.connect();
    const roundTrips: number[] = [];
    for (let i = 0; i < 100; i++) {
      const t0 = performance.now();
      await client.query('SELECT 1');
      roundTrips.push(performance.now() - t0);
    }
    client.release();
    await bare.end();

    const ms = (xs: number[]) => [50, 95, 99].map((p) => f1(pct(xs, p))).join(' / ');
    const traffic = (r: typeof stores) => `${f1(r.messages)} / ${f1(r.connections)}`;
    rows.push([`${latencyMs}`, ms(stores.ms), traffic(stores), ms(searches.ms), traffic(searches), ms(usage.ms), traffic(usage), ms(roundTrips)]);
  } finally {
    await worker.stop();
    await proxy.close();
  }
}
await upstash.close();

console.log(
  `\n### The worker in workerd, Postgres through the Neon stand-in (${STORES} stores, ${SEARCHES} semantic searches, one client; p50 / p95 / p99 ms)\n`,
);
console.log(
  table(
    [
      'latency added per round trip (ms)',
      'store',
      'messages / connections to Postgres per store',
      'semantic search',
      'messages / connections per search',
      '`GET /v1/usage`',
      'messages / connections',
      'bare round trip (SELECT 1)',
    ],
    rows,
  ),
);
console.log(`\nload average at start ${loadAtStart}, at end ${load()}`);
