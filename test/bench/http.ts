/**
 * HTTP benchmark: a bare Hono hello-world against the real engram Node server (GET /healthz and the
 * authenticated, rate-limited, quota-counted GET /v1/usage), then two correctness checks under load.
 *
 *   npx tsx test/bench/http.ts [--duration 10] [--rounds 3] [--postgres] [--instances 2] [--profile]   (--postgres reads DATABASE_URL, REDIS_URL)
 *
 * `--profile`: after the rounds, each target of this process once more under the CPU profiler
 * (test/bench/cpu-phases.ts), its load on this instance alone, and a table of this process's CPU
 * per request by phase, with the functions of most self time on `/v1/usage`. The load generator
 * runs in a worker thread, so what the profiler samples is the servers. BENCH_CPU_PROFILE_DIR=<dir>
 * also writes the profiles as .cpuprofile files.
 *
 * On Postgres it runs two instances by default, as several instances behind a load balancer would:
 * this process and a child (test/bench/http-instance.ts), each with a bare hello-world beside its
 * engram server; the load is split evenly over both, and the checks cross instances (counted on
 * both, revoked through one, refused by the other).
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { serve, type ServerType } from '@hono/node-server';
import runAutocannon from 'autocannon';
import { Hono } from 'hono';
import { buildApp } from '../../functions/app';
import { parseConfig } from '../../shared/platform/contract/config';
import { createNodeServices, type NodeServices } from '../../shared/node/services';
import { breakdown, type PhaseBreakdown, phaseTable, profiled, topTable } from './cpu-phases';

// What we read of autocannon's result (test/bench/autocannon.d.ts). Latencies are in ms.
interface Stats {
  mean: number;
  p50: number;
  p97_5: number;
  p99: number;
}
interface Result {
  requests: Stats & { sent: number; total: number };
  latency: Stats;
  '2xx': number;
  non2xx: number;
  errors: number;
  timeouts: number;
  warmup?: Result;
}
const autocannon = runAutocannon as (opts: Record<string, unknown>) => Promise<Result>;

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    postgres: { type: 'boolean', default: false },
    instances: { type: 'string' },
    rounds: { type: 'string', default: '3' },
    profile: { type: 'boolean', default: false },
  },
});
const DURATION = Number(args.duration);
const INSTANCES = Number(args.instances ?? (args.postgres ? 2 : 1));
const ROUNDS = Number(args.rounds);
if (!(ROUNDS >= 1)) throw new Error('--rounds must be at least 1');
if (INSTANCES !== 1 && INSTANCES !== 2) throw new Error('--instances is 1 or 2');
if (INSTANCES === 2 && !args.postgres) throw new Error('--instances 2 needs --postgres (embedded PGlite belongs to one process)');
const CONNECTIONS = 50;
// JIT, key cache and PGlite buffers warm before anything is measured (BENCH_SMOKE=1: test/bench/smoke.ts, figures meaningless)
const WARMUP_SECONDS = process.env.BENCH_SMOKE === '1' ? 1 : 2;
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
const close = (server: ServerType) =>
  new Promise<void>((resolve) => {
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
const loadOne = (url: string, headers: Record<string, string>, connections: number) =>
  autocannon({ url, headers, connections, duration: DURATION, workers: 1, warmup: { connections, duration: WARMUP_SECONDS } });

/** The connections split evenly over the instances, all at once; counts add up, latencies are the worst instance's. */
async function load(urls: string[], headers: Record<string, string> = {}): Promise<Result> {
  const results = await Promise.all(urls.map((url) => loadOne(url, headers, Math.floor(CONNECTIONS / urls.length))));
  const combine = (rs: Result[]): Result => ({
    requests: {
      mean: rs.reduce((n, r) => n + r.requests.mean, 0),
      p50: 0,
      p97_5: 0,
      p99: 0,
      sent: rs.reduce((n, r) => n + r.requests.sent, 0),
      total: rs.reduce((n, r) => n + r.requests.total, 0),
    },
    latency: {
      mean: Math.max(...rs.map((r) => r.latency.mean)),
      p50: Math.max(...rs.map((r) => r.latency.p50)),
      p97_5: Math.max(...rs.map((r) => r.latency.p97_5)),
      p99: Math.max(...rs.map((r) => r.latency.p99)),
    },
    '2xx': rs.reduce((n, r) => n + r['2xx'], 0),
    non2xx: rs.reduce((n, r) => n + r.non2xx, 0),
    errors: rs.reduce((n, r) => n + r.errors, 0),
    timeouts: rs.reduce((n, r) => n + r.timeouts, 0),
  });
  const all = combine(results);
  const warmups = results.map((r) => r.warmup).filter((w): w is Result => Boolean(w));
  if (warmups.length) all.warmup = combine(warmups);
  return all;
}

/** The second instance: a child process, its URLs read from its first line of output. */
async function startChild() {
  const child = spawn(process.execPath, ['--import', 'tsx', new URL('./http-instance.ts', import.meta.url).pathname], {
    env: { ...process.env, BENCH_ADMIN_TOKEN: ADMIN_TOKEN },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  const first = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the second instance exited with ${code}`)));
  });
  return { child, ...(JSON.parse(first) as { bare: string; engram: string }) };
}

const mb = () => Math.round(process.memoryUsage().rss / 2 ** 20);
const dataDir = args.postgres ? null : await mkdtemp(join(tmpdir(), 'engram-bench-'));
let node: NodeServices | null = null;
let second: Awaited<ReturnType<typeof startChild>> | null = null;
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
  if (INSTANCES === 2) second = await startChild();
  const bares = [bare.url, ...(second ? [second.bare] : [])];
  const engrams = [engram.url, ...(second ? [second.engram] : [])];
  /** Both instances' tallies added up. */
  const tallies = async () => {
    const other = second ? ((await (await fetch(`${second.engram}/__bench/tally`)).json()) as { arrived: number; served: number; inFlight: number }) : null;
    return { arrived: arrived + (other?.arrived ?? 0), served: served + (other?.served ?? 0), inFlight: inFlight + (other?.inFlight ?? 0) };
  };

  const tenant = await call('POST', `${engram.url}/admin/v1/tenants`, ADMIN_TOKEN, { email: `bench-${crypto.randomUUID()}@example.com`, tier: 'enterprise' });
  if (tenant.status !== 201) throw new Error(`tenant creation failed: ${tenant.status} ${JSON.stringify(tenant.body)}`);
  const { api_key: key, key_id: keyId } = tenant.body as { api_key: string; key_id: string };

  console.log(
    `engram HTTP bench: node ${process.version}, ${availableParallelism()} cores, storage ${node.services.storage}${config.REDIS_URL ? ' + redis' : ''}, ${INSTANCES} instance${INSTANCES > 1 ? 's (processes), load split evenly' : ''}, ${CONNECTIONS} connections, ${WARMUP_SECONDS}s warm-up + ${DURATION}s each`,
  );
  const rssBefore = mb();
  // The targets take turns, ROUNDS times: on a shared machine the load of other work drifts within
  // a minute, and each ratio is taken within one round. Reported: the median round.
  const targets: [string, string[], Record<string, string>][] = [
    ['hello-world GET /', bares.map((u) => `${u}/`), {}],
    ['engram GET /healthz', engrams.map((u) => `${u}/healthz`), {}],
    ['engram GET /v1/usage (auth)', engrams.map((u) => `${u}/v1/usage`), { authorization: `Bearer ${key}` }],
  ];
  const rounds: Result[][] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const results: Result[] = [];
    for (const [, urls, headers] of targets) results.push(await load(urls, headers));
    rounds.push(results);
  }
  const rssAfter = mb();

  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
  const rows = [['target', 'req/s', 'p50 ms', 'p97.5 ms', 'p99 ms', 'non-2xx', 'errors', 'vs bare', ...(ROUNDS > 1 ? ['vs bare, each round'] : [])]];
  targets.forEach(([name], t) => {
    const of = (f: (r: Result) => number) => median(rounds.map((r) => f(r[t])));
    const ratios = rounds.map((r) => (r[t].requests.mean / r[0].requests.mean) * 100);
    rows.push([
      name,
      of((r) => r.requests.mean).toFixed(0),
      of((r) => r.latency.p50).toFixed(2),
      of((r) => r.latency.p97_5).toFixed(2),
      of((r) => r.latency.p99).toFixed(2),
      String(rounds.reduce((n, r) => n + r[t].non2xx, 0)),
      String(rounds.reduce((n, r) => n + r[t].errors, 0)),
      `${median(ratios).toFixed(1)}%`,
      ...(ROUNDS > 1 ? [ratios.map((x) => `${x.toFixed(1)}%`).join(' ')] : []),
    ]);
  });
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  for (const row of rows) console.log(row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  '));
  console.log(
    `(medians of ${ROUNDS} round${ROUNDS > 1 ? 's' : ''}; autocannon reports no p95, p97.5 is shown; latencies exclude the warm-up; load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')})`,
  );
  console.log(
    `RSS: ${rssBefore} MB before, ${rssAfter} MB after (this process: both servers, ${node.services.storage === 'embedded' ? 'PGlite' : 'the pg pool'}, the autocannon workers)`,
  );

  const profiledUsage: Result[] = [];
  if (args.profile) {
    // This instance alone, one target at a time; requests are counted by the server (a request
    // autocannon abandoned in flight was still served and sampled).
    const columns: [string, PhaseBreakdown][] = [];
    for (const [name, urls, headers] of targets) {
      const url = urls[0];
      const servedBefore = served;
      const usage = name.includes('/v1/usage');
      const { result, profile } = await profiled(() => loadOne(url, headers, CONNECTIONS));
      if (usage) profiledUsage.push(result);
      if (process.env.BENCH_CPU_PROFILE_DIR) {
        await writeFile(
          join(process.env.BENCH_CPU_PROFILE_DIR, `http-${name.split(' ').slice(0, 3).join('-').replace(/\W+/g, '-')}.cpuprofile`),
          JSON.stringify(profile),
        );
      }
      const answered = usage ? served - servedBefore : result.requests.total + (result.warmup?.requests.total ?? 0);
      columns.push([name, breakdown(profile, answered)]);
    }
    console.log(
      `\nThis process's CPU per request by phase (CPU profiler, ${DURATION}s of each target on this instance alone; load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}):\n`,
    );
    console.log(phaseTable(columns));
    console.log('\nGET /v1/usage: the 10 functions with the most self time\n');
    console.log(topTable(columns[2][1]));
  }

  const both = [...rounds.map((r) => r[2]), ...profiledUsage].flatMap((r) => (r.warmup ? [r, r.warmup] : [r]));
  const received = both.reduce((n, r) => n + r['2xx'], 0);
  const sent = both.reduce((n, r) => n + r.requests.sent, 0);
  const abandoned = sent - both.reduce((n, r) => n + r.requests.total, 0);
  for (let t = await tallies(), until = Date.now() + 10_000; (t.arrived < sent || t.inFlight > 0) && Date.now() < until; t = await tallies()) {
    await new Promise((r) => setTimeout(r, 10));
  }
  await node.services.counters.settle();
  const servedBefore = (await tallies()).served;
  const usage = await call('GET', `${engrams[engrams.length - 1]}/v1/usage`, key);
  const counted = usage.body?.api_calls?.current;
  const countOk = both.every((r) => r.non2xx === 0) && counted === received + abandoned + 1 && counted === servedBefore + 1;
  console.log(
    `quota: api_calls.current = ${counted}; autocannon 2xx + 1 = ${received + 1} (${counted === received + 1 ? 'equal' : `differs by ${counted - received - 1}`})`,
  );
  console.log(
    `  + ${abandoned} sent but abandoned in flight when autocannon stopped = ${received + abandoned + 1}; server-side 2xx answers + 1 = ${servedBefore + 1} -> ${countOk ? 'EXACT' : 'MISMATCH'}`,
  );
  if (!countOk) failed = true;

  // Check 2: revocation is immediate even though the old key sits in the key cache (of the other
  // instance, when there are two: rotated and revoked through this one, refused by that one).
  const other = engrams[engrams.length - 1];
  const rotated = await call('POST', `${engram.url}/v1/keys/rotate`, key);
  const graceOk = (await call('GET', `${other}/v1/usage`, key)).status; // old key in grace: 200, cached
  const revoked = await call('POST', `${engram.url}/v1/keys/revoke`, rotated.body.new_key, { key_id: keyId });
  const next = (await call('GET', `${other}/v1/usage`, key)).status;
  const revocationOk = rotated.status === 200 && graceOk === 200 && revoked.status === 200 && next === 401;
  const where = INSTANCES === 2 ? ' on the other instance' : '';
  console.log(
    `revocation: rotate ${rotated.status}, old key during grace${where} ${graceOk}, revoke ${revoked.status}, very next request with old key${where} ${next} -> ${revocationOk ? 'OK' : 'FAILED'}`,
  );
  if (!revocationOk) failed = true;
} catch (err) {
  console.error(err);
  failed = true;
} finally {
  for (const server of servers) await close(server);
  if (second) {
    const exited = new Promise((r) => second!.child.once('exit', r));
    second.child.stdin!.end();
    await exited;
  }
  await node?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true, maxRetries: 5 });
}
process.exit(failed ? 1 : 0);
