/**
 * Several engram instances on one PostgreSQL and one Redis under many concurrent clients: zero
 * errors and exact counters, beside one instance under the same mix.
 *
 *   DATABASE_URL=postgres://.../engram_cluster REDIS_URL=redis://.../5 npm run bench:cluster --
 *     [--seconds 300] [--single-seconds 60] [--instances 3] [--clients 100] [--tenants 10]
 *
 * Each instance is `functions/node.ts` in a child process (hash embedder). The clients pick the
 * instance round-robin per request (the balancer) and loop: 40% POST /v1/memories (a new text
 * each), 40% searches (semantic, keyword, hybrid in turn), 20% GET /v1/memories. Client i works for
 * tenant i mod --tenants. At the end, for every tenant: the memories in the table, the live count
 * and the period's memories counter (usage_counters) and GET /v1/usage's memories and api_calls must
 * equal what the clients were answered. Then the same for one instance, --single-seconds long, on
 * fresh tenants. Exits 1 on any error or counter off by one.
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { f0, f1, pct, rng, table } from './lib';
import { call, createTenant, load, observation, queries, type Server, startServer } from './scale-lib';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '300' },
    'single-seconds': { type: 'string', default: '60' },
    instances: { type: 'string', default: '3' },
    clients: { type: 'string', default: '100' },
    tenants: { type: 'string', default: '10' },
  },
});
const DATABASE_URL = process.env.DATABASE_URL;
if (!DATABASE_URL) throw new Error('DATABASE_URL: a database of its own for this bench');
const CLIENTS = Number(args.clients);
const TENANTS = Number(args.tenants);
const texts = queries(200, 5);

interface Tally {
  stores: number;
  requests: number;
}

async function run(servers: Server[], seconds: number, label: string) {
  const tenants: { key: string; tenantId: string }[] = [];
  for (let i = 0; i < TENANTS; i++) tenants.push(await createTenant(servers[0].url, `${label}-${i}`));
  const tally = new Map<string, Tally>(tenants.map((t) => [t.tenantId, { stores: 0, requests: 0 }]));
  const latency: Record<string, number[]> = { store: [], search: [], list: [] };
  const errors = new Map<string, number>();
  let next = 0;
  let serial = 0;
  const deadline = Date.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, c) => {
      const tenant = tenants[c % TENANTS];
      const t = tally.get(tenant.tenantId)!;
      const r = rng(1000 + c);
      let n = 0;
      while (Date.now() < deadline) {
        const base = servers[next++ % servers.length].url;
        const roll = r();
        const kind = roll < 0.4 ? 'store' : roll < 0.8 ? 'search' : 'list';
        const t0 = performance.now();
        try {
          if (kind === 'store') await call('POST', `${base}/v1/memories`, tenant.key, { observation: observation(r, (c + 1) * 10_000_000 + ++serial) });
          else if (kind === 'search')
            await call(
              'GET',
              `${base}/v1/memories/search?${new URLSearchParams({ q: texts[n % texts.length], limit: '10', mode: ['semantic', 'keyword', 'hybrid'][n % 3] })}`,
              tenant.key,
            );
          else await call('GET', `${base}/v1/memories?limit=20`, tenant.key);
          latency[kind].push(performance.now() - t0);
          if (kind === 'store') t.stores++;
        } catch (err) {
          const key = `${kind}: ${String((err as Error).message).slice(0, 160)}`;
          errors.set(key, (errors.get(key) ?? 0) + 1);
        }
        t.requests++; // counted by the server whether answered or not, as long as it arrived
        n++;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;

  const db = new pg.Client({ connectionString: DATABASE_URL });
  await db.connect();
  const mismatches: string[] = [];
  try {
    for (const tenant of tenants) {
      const want = tally.get(tenant.tenantId)!;
      const usage = await call('GET', `${servers[0].url}/v1/usage`, tenant.key);
      const [row] = (
        await db.query(
          `SELECT (SELECT count(*) FROM memories WHERE tenant_id = $1)::int AS rows,
                  (SELECT value FROM usage_counters WHERE tenant_id = $1 AND metric = 'memories_live' AND bucket = 'all')::int AS live,
                  (SELECT value FROM usage_counters WHERE tenant_id = $1 AND metric = 'memories' AND bucket = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM'))::int AS period`,
          [tenant.tenantId],
        )
      ).rows;
      const checks: [string, number, number][] = [
        ['memory rows', row.rows, want.stores],
        ['live count', row.live, want.stores],
        ['period memories counter', row.period, want.stores],
        ['GET /v1/usage memories', usage.memories.current, want.stores],
        // The usage request itself is counted before it answers.
        ['GET /v1/usage api_calls', usage.api_calls.current, want.requests + 1],
      ];
      for (const [what, got, expected] of checks) if (got !== expected) mismatches.push(`${tenant.tenantId} ${what}: ${got}, acknowledged ${expected}`);
    }
  } finally {
    await db.end();
  }
  const total = Object.values(latency).reduce((a, xs) => a + xs.length, 0);
  const stores = [...tally.values()].reduce((a, t) => a + t.stores, 0);
  const ms = (xs: number[]) => (xs.length ? `${f1(pct(xs, 50))} / ${f1(pct(xs, 95))} / ${f1(pct(xs, 99))}` : '–');
  return {
    row: [
      label,
      f0(elapsed),
      String(total),
      f0(total / elapsed),
      ms(latency.store),
      ms(latency.search),
      ms(latency.list),
      String([...errors.values()].reduce((a, b) => a + b, 0)),
      `${stores} stores: ${mismatches.length ? `${mismatches.length} OFF` : 'all exact'}`,
      load(),
    ],
    errors,
    mismatches,
  };
}

const env = { DATABASE_URL, REDIS_URL: process.env.REDIS_URL };
const instances = Number(args.instances);
const header = ['instances', 'seconds', 'requests', 'requests/s', 'store p50 / p95 / p99', 'search', 'list', 'errors', 'counters', 'load average'];
const rowsOut: string[][] = [];
let failed = false;
for (const [count, seconds] of [
  [instances, Number(args.seconds)],
  [1, Number(args['single-seconds'])],
] as const) {
  if (!(seconds > 0)) continue;
  const servers = await Promise.all(Array.from({ length: count }, () => startServer(env)));
  try {
    console.error(`${count} instance(s), ${CLIENTS} clients, ${seconds} s (load average ${load()})`);
    const out = await run(servers, seconds, `${count} instance${count > 1 ? 's' : ''}`);
    rowsOut.push(out.row);
    for (const [e, n] of out.errors) console.error(`  error ×${n}: ${e}`);
    for (const m of out.mismatches) console.error(`  counter: ${m}`);
    const rss = await Promise.all(servers.map((s) => s.rss()));
    console.error(`  server RSS MB (now / peak): ${rss.map((r) => `${r.rss} / ${r.peak}`).join(', ')}`);
    if (out.errors.size || out.mismatches.length) failed = true;
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
}
console.log(`\n### ${CLIENTS} clients, 40% stores, 40% searches, 20% lists, over ${TENANTS} tenants; latencies in ms\n`);
console.log(table(header, rowsOut));
process.exit(failed ? 1 : 0);
