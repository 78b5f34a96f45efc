/**
 * Live event stream benchmark: time from a write's commit to its event arriving at an SSE client
 * (GET /v1/events/stream over real HTTP, the Node server in this process), p50/p95/p99, for
 *  - `woken`: as deployed on Node: the unit of work wakes the tenant's streams right after commit
 *    (shared/platform/data/event-bus.ts), polling only as the fallback;
 *  - `poll only`: the same stream with no wake-up, finding events by polling every `--poll` ms:
 *    what a stream on another instance (or on Workers) sees, the baseline.
 *
 *   npm run bench:events [-- --writes 500 --poll 1000]
 *
 * Embedded PGlite always; also Postgres (and Redis for the stream leases) when DATABASE_URL or
 * TEST_DATABASE_URL is set (REDIS_URL / TEST_REDIS_URL). Writes are `POST /v1/memories`, one at a
 * time with a random 0-20 ms pause between them, embedded with the `hash` provider (the model is
 * not what is measured). "Commit" is the moment the transaction's commit returned, taken where
 * the unit of work publishes to the event bus; "arrival" is when the client has parsed the event.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildApp } from '../../functions/app';
import { listen } from '../../shared/node/http-server';
import { createNodeServices } from '../../shared/node/services';
import { parseConfig } from '../../shared/platform/contract/config';
import { f1, pct, rng, table } from './lib';

const { values: args } = parseArgs({ options: { writes: { type: 'string', default: '500' }, poll: { type: 'string', default: '1000' } } });
const WRITES = Number(args.writes);
const POLL_MS = Number(args.poll);
if (!(WRITES > 0) || !(POLL_MS >= 10)) throw new Error('--writes must be positive and --poll at least 10 (ms)');
const ADMIN_TOKEN = `bench-admin-${crypto.randomUUID()}`;
const postgresUrl = process.env.DATABASE_URL ?? process.env.TEST_DATABASE_URL;
const redisUrl = process.env.REDIS_URL ?? process.env.TEST_REDIS_URL;

type Mode = 'woken' | 'poll only';
interface Row {
  storage: string;
  mode: Mode;
  latencies: number[];
  writeMs: number[];
}

async function run(storage: 'embedded' | 'postgres'): Promise<Row[]> {
  const dataDir = storage === 'embedded' ? await mkdtemp(join(tmpdir(), 'engram-bench-events-')) : null;
  const config = parseConfig({
    PORT: '0',
    DATA_DIR: dataDir ?? undefined,
    DATABASE_URL: storage === 'postgres' ? postgresUrl : undefined,
    REDIS_URL: storage === 'postgres' ? redisUrl : undefined,
    ADMIN_TOKEN,
    LOG_LEVEL: 'warn',
    EMBEDDING_PROVIDER: 'hash',
    EVENT_STREAM_POLL_MS: String(POLL_MS),
    RATE_LIMIT_SCALE: '1000',
  });
  const node = await createNodeServices(config);
  node.runner.start();
  const bus = node.services.eventBus!;
  const publish = bus.publish.bind(bus);
  let mode: Mode = 'woken';
  // Commit times per tenant, in commit order: the tenant's event n committed at commits[n - 1].
  const commits = new Map<string, number[]>();
  bus.publish = (tenantIds) => {
    const at = performance.now();
    for (const t of tenantIds) commits.set(t, [...(commits.get(t) ?? []), at]);
    if (mode === 'woken') publish(tenantIds);
  };
  const app = buildApp(() => node.services);
  const { server, address } = await listen(app.fetch, { host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${address.port}`;
  const rows: Row[] = [];
  try {
    for (const m of ['woken', 'poll only'] as Mode[]) {
      mode = m;
      const created = await fetch(`${base}/admin/v1/tenants`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ email: `bench-${crypto.randomUUID().slice(0, 8)}@example.com`, tier: 'enterprise' }),
      });
      const tenant = (await created.json()) as { tenant_id: string; api_key: string };
      const headers = { authorization: `Bearer ${tenant.api_key}` };

      const client = new AbortController();
      const res = await fetch(`${base}/v1/events/stream`, { headers, signal: client.signal });
      if (res.status !== 200) throw new Error(`stream: ${res.status} ${await res.text()}`);
      const arrivals = new Map<number, number>();
      const reading = (async () => {
        const reader = res.body!.getReader();
        const decoder = new TextDecoder();
        let buffer = '';
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) return;
            buffer += decoder.decode(value, { stream: true });
            let end: number;
            while ((end = buffer.indexOf('\n\n')) >= 0) {
              const id = /^id: (\d+)$/m.exec(buffer.slice(0, end));
              if (id) arrivals.set(Number(id[1]), performance.now());
              buffer = buffer.slice(end + 2);
            }
          }
        } catch {
          /* aborted at the end */
        }
      })();

      const random = rng(42);
      const writeMs: number[] = [];
      for (let i = 0; i < WRITES; i++) {
        const t0 = performance.now();
        const w = await fetch(`${base}/v1/memories`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ observation: `Benchmark memory ${i}: the agent noted fact number ${Math.floor(random() * 1e9)}.` }),
        });
        await w.arrayBuffer();
        if (w.status !== 201) throw new Error(`write ${i}: ${w.status}`);
        writeMs.push(performance.now() - t0);
        await new Promise((r) => setTimeout(r, random() * 20));
      }
      const until = Date.now() + POLL_MS * 3 + 10_000;
      while (arrivals.size < WRITES && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      client.abort();
      await reading;
      const committed = commits.get(tenant.tenant_id) ?? [];
      if (arrivals.size < WRITES || committed.length !== WRITES)
        throw new Error(`${m}: ${arrivals.size} of ${WRITES} events arrived, ${committed.length} commits seen`);
      const latencies = committed.map((at, i) => arrivals.get(i + 1)! - at);
      rows.push({ storage: storage === 'postgres' ? `postgres${redisUrl ? ' + redis' : ''}` : 'embedded', mode: m, latencies, writeMs });
    }
  } finally {
    server.close();
    (server as { closeAllConnections?: () => void }).closeAllConnections?.();
    await node.close();
    // A file PGlite still flushes after close can make one pass of the removal fail (ENOTEMPTY).
    if (dataDir) await rm(dataDir, { recursive: true, force: true, maxRetries: 5 });
  }
  return rows;
}

const rows = [...(await run('embedded')), ...(postgresUrl ? await run('postgres') : [])];
console.log(`\ncommit → event at the SSE client, ${WRITES} writes per row, poll interval ${POLL_MS} ms (ms)\n`);
console.log(
  table(
    ['storage', 'stream', 'p50', 'p95', 'p99', 'max', 'write p50'],
    rows.map((r) => [
      r.storage,
      r.mode,
      f1(pct(r.latencies, 50)),
      f1(pct(r.latencies, 95)),
      f1(pct(r.latencies, 99)),
      f1(Math.max(...r.latencies)),
      f1(pct(r.writeMs, 50)),
    ]),
  ),
);
process.exit(0);
