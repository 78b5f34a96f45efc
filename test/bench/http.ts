/**
 * HTTP benchmark: a bare Hono hello-world against the real engram Node server (GET /healthz and the
 * authenticated, rate-limited, quota-counted GET /v1/usage), then two correctness checks under load.
 *
 *   npx tsx test/bench/http.ts [--duration 10] [--postgres]   (--postgres reads DATABASE_URL, REDIS_URL)
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { buildApp } from '../../functions/app';
import { parseConfig } from '../../shared/platform/config';
import { createNodeServices, type NodeServices } from '../../shared/node/services';

// autocannon ships no types; describe only what we read. Latencies are in ms.
interface Stats { mean: number; p50: number; p97_5: number; p99: number }
interface Result { requests: Stats & { sent: number; total: number }; latency: Stats; '2xx': number; non2xx: number; errors: number; timeouts: number; warmup?: Result }
const autocannon = createRequire(import.meta.url)('autocannon') as (opts: Record<string, unknown>) => Promise<Result>;

const { values: args } = parseArgs({ options: { duration: { type: 'string', default: '10' }, postgres: { type: 'boolean', default: false } } });
const DURATION = Number(args.duration);
const CONNECTIONS = 50;
const WARMUP_SECONDS = 2; // JIT, key cache and PGlite buffers warm before anything is measured
const ADMIN_TOKEN = `bench-admin-${crypto.randomUUID()}`;
if (!(DURATION > 0)) throw new Error('--duration must be a positive number of seconds');
if (args.postgres && !process.env.DATABASE_URL) throw new Error('--postgres needs DATABASE_URL');

type Fetch = (req: Request, env: unknown) => Response | Promise<Response>;
function listen(fetch: Fetch): Promise<{ server: ServerType; url: string }> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch, port: 0, hostname: '127.0.0.1' }, (info) => resolve({ server, url: `http://127.0.0.1:${info.port}` }));
    server.once('error', reject);
  });
}
const close = (server: ServerType) => new Promise<void>((resolve) => {
  server.close(() => resolve());
  (server as { closeAllConnections?: () => void }).closeAllConnections?.();
});

async function call(method: string, url: string, token: string, body?: unknown) {
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: (text.startsWith('{') ? JSON.parse(text) : text) as any };
}

// The load generator runs in a worker thread: in the main thread it would share the server's
// event loop and measure itself. The servers stay in this thread, as in production.
const load = (url: string, headers: Record<string, string> = {}) =>
  autocannon({ url, headers, connections: CONNECTIONS, duration: DURATION, workers: 1, warmup: { connections: CONNECTIONS, duration: WARMUP_SECONDS } });

const mb = () => Math.round(process.memoryUsage().rss / 2 ** 20);
const dataDir = args.postgres ? null : await mkdtemp(join(tmpdir(), 'engram-bench-'));
let node: NodeServices | null = null;
const servers: ServerType[] = [];
let failed = false;
try {
  const bare = await listen(new Hono().get('/', (c) => c.text('ok')).fetch);
  servers.push(bare.server);

  // Wired exactly as functions/node.ts does, with a configuration instead of process.env.
  const config = parseConfig({
    PORT: '0',
    DATA_DIR: dataDir ?? undefined,
    DATABASE_URL: args.postgres ? process.env.DATABASE_URL : undefined,
    REDIS_URL: args.postgres ? process.env.REDIS_URL : undefined,
    ADMIN_TOKEN,
    PGLITE_FSYNC: process.env.PGLITE_FSYNC, // durable commits by default; 0 compares with the earlier numbers
    LOG_LEVEL: 'silent',
    RATE_LIMIT_SCALE: '1000', // enterprise 10k/min x 1000: the per-key limit never caps the run
  });
  node = await createNodeServices(config);
  node.runner.start();
  const app = buildApp(() => node!.services);
  // Server-side tallies of /v1/usage requests: they cross-check the quota counter and tell when
  // every request autocannon sent has been answered (those it abandoned arrive late, see below).
  let arrived = 0;
  let served = 0;
  let inFlight = 0;
  const engram = await listen(async (req, env) => {
    const usagePath = req.url.endsWith('/v1/usage');
    if (usagePath) arrived++;
    inFlight++;
    try {
      const res = await app.fetch(req, env as never);
      if (usagePath && res.status < 300) served++;
      return res;
    } finally {
      inFlight--;
    }
  });
  servers.push(engram.server);

  const tenant = await call('POST', `${engram.url}/admin/v1/tenants`, ADMIN_TOKEN, { email: `bench-${crypto.randomUUID()}@example.com`, tier: 'enterprise' });
  if (tenant.status !== 201) throw new Error(`tenant creation failed: ${tenant.status} ${JSON.stringify(tenant.body)}`);
  const { api_key: key, key_id: keyId } = tenant.body as { api_key: string; key_id: string };

  console.log(`engram HTTP bench: node ${process.version}, ${availableParallelism()} cores, storage ${node.services.storage}${config.REDIS_URL ? ' + redis' : ''}, ${CONNECTIONS} connections, ${WARMUP_SECONDS}s warm-up + ${DURATION}s each`);
  const rssBefore = mb();
  const runs: [string, Result][] = [];
  runs.push(['hello-world GET /', await load(`${bare.url}/`)]);
  runs.push(['engram GET /healthz', await load(`${engram.url}/healthz`)]);
  runs.push(['engram GET /v1/usage (auth)', await load(`${engram.url}/v1/usage`, { authorization: `Bearer ${key}` })]);
  const rssAfter = mb();

  const base = runs[0][1].requests.mean;
  const rows = [['target', 'req/s', 'p50 ms', 'p97.5 ms', 'p99 ms', 'non-2xx', 'errors', 'vs bare']];
  for (const [name, r] of runs) {
    rows.push([name, r.requests.mean.toFixed(0), r.latency.p50.toFixed(2), r.latency.p97_5.toFixed(2), r.latency.p99.toFixed(2),
      String(r.non2xx), String(r.errors), `${((r.requests.mean / base) * 100).toFixed(1)}%`]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  for (const row of rows) console.log(row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  '));
  console.log('(autocannon reports no p95; p97.5 is shown. Latencies exclude the warm-up.)');
  console.log(`RSS: ${rssBefore} MB before, ${rssAfter} MB after (one process: both servers, ${node.services.storage === 'embedded' ? 'PGlite' : 'the pg pool'}, the autocannon worker)`);

  // Check 1: the quota counter is exact. Warm-up requests count too; the final GET counts itself.
  // autocannon stops by destroying its connections, abandoning the requests in flight (sent minus
  // completed). The server still receives, answers and counts them, some only after autocannon
  // has returned, so wait until every sent request has been answered before reading the counter.
  const usageRun = runs[2][1];
  const both = usageRun.warmup ? [usageRun, usageRun.warmup] : [usageRun];
  const received = both.reduce((n, r) => n + r['2xx'], 0);
  const sent = both.reduce((n, r) => n + r.requests.sent, 0);
  const abandoned = sent - both.reduce((n, r) => n + r.requests.total, 0);
  for (const until = Date.now() + 10_000; (arrived < sent || inFlight > 0) && Date.now() < until; ) await new Promise((r) => setTimeout(r, 10));
  await node.services.counters.settle();
  const servedBefore = served;
  const usage = await call('GET', `${engram.url}/v1/usage`, key);
  const counted = usage.body?.api_calls?.current;
  const countOk = both.every((r) => r.non2xx === 0) && counted === received + abandoned + 1 && counted === servedBefore + 1;
  console.log(`quota: api_calls.current = ${counted}; autocannon 2xx + 1 = ${received + 1} (${counted === received + 1 ? 'equal' : `differs by ${counted - received - 1}`})`);
  console.log(`  + ${abandoned} sent but abandoned in flight when autocannon stopped = ${received + abandoned + 1}; server-side 2xx answers + 1 = ${servedBefore + 1} -> ${countOk ? 'EXACT' : 'MISMATCH'}`);
  if (!countOk) failed = true;

  // Check 2: revocation is immediate even though the old key sits in the key cache.
  const rotated = await call('POST', `${engram.url}/v1/keys/rotate`, key);
  const graceOk = (await call('GET', `${engram.url}/v1/usage`, key)).status; // old key in grace: 200, cached
  const revoked = await call('POST', `${engram.url}/v1/keys/revoke`, rotated.body.new_key, { key_id: keyId });
  const next = (await call('GET', `${engram.url}/v1/usage`, key)).status;
  const revocationOk = rotated.status === 200 && graceOk === 200 && revoked.status === 200 && next === 401;
  console.log(`revocation: rotate ${rotated.status}, old key during grace ${graceOk}, revoke ${revoked.status}, very next request with old key ${next} -> ${revocationOk ? 'OK' : 'FAILED'}`);
  if (!revocationOk) failed = true;
} catch (err) {
  console.error(err);
  failed = true;
} finally {
  for (const server of servers) await close(server);
  await node?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
