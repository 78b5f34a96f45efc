/**
 * Webhook delivery, measured end to end on one machine:
 *   1. commit → delivery latency: memories stored one at a time; the time from the store's answer
 *      (its commit) to the receiver seeing the signed delivery, p50/p95/p99;
 *   2. deliveries per second: a backlog of events delivered from the outbox by the job runner,
 *      side by side with plain `fetch` POSTs of the same bodies to the same receiver at the same
 *      concurrency (what the receiver and the HTTP client allow, without engram).
 * Embedded PGlite by default; DATABASE_URL (and REDIS_URL) to run on Postgres.
 *   npx tsx test/bench/webhooks.ts [--latency N] [--backlog N]
 */
import { startReceiver } from '../standins/webhook-receiver';
import { f0, f1, inProcessEngram, pct, pool, table } from './lib';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const LATENCY_N = arg('latency', 300);
const BACKLOG_N = arg('backlog', 2000);

async function main() {
  const { node, call, newTenant } = await inProcessEngram({ WEBHOOKS_ALLOW_INSECURE: '1' });
  node.runner.start();
  const tenant = await newTenant();
  const receiver = await startReceiver();
  await call('POST', '/v1/webhooks', tenant.api_key, { url: receiver.url('/bench'), events: ['memory.created'] });
  const storage = node.services.storage;

  // 1. Latency, one store at a time.
  const latencies: number[] = [];
  for (let i = 0; i < LATENCY_N; i++) {
    const expected = receiver.received.length + 1;
    await call('POST', '/v1/memories', tenant.api_key, { observation: `latency probe ${i}`, auto_link: false });
    const committed = performance.now();
    await receiver.waitFor(expected);
    latencies.push(receiver.received[expected - 1].at - committed);
  }

  // 2. Throughput: a backlog written with the runner stopped, then drained.
  await node.runner.stop();
  const wake = node.services.notifyJobs;
  node.services.notifyJobs = () => undefined; // nothing runs until the backlog is complete
  const before = receiver.received.length;
  await pool(
    Array.from({ length: BACKLOG_N }, (_, i) => i),
    8,
    async (i) => {
      await call('POST', '/v1/memories', tenant.api_key, { observation: `backlog ${i}`, auto_link: false });
    },
  );
  if (receiver.received.length !== before) throw new Error('deliveries ran while the backlog was written');
  const started = performance.now();
  node.services.notifyJobs = wake;
  node.runner.start();
  node.runner.wake();
  await receiver.waitFor(before + BACKLOG_N);
  const engramSeconds = (performance.now() - started) / 1000;
  await node.runner.stop();

  // The same number of POSTs with plain fetch, 20 at a time (the runner's batch size).
  const body = JSON.stringify(receiver.received[before].json);
  const plainStart = performance.now();
  await pool(
    Array.from({ length: BACKLOG_N }, (_, i) => i),
    20,
    async () => {
      const res = await fetch(receiver.url('/plain'), { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      await res.text();
    },
  );
  const plainSeconds = (performance.now() - plainStart) / 1000;

  console.log(`\nWebhook delivery on ${storage}, ${LATENCY_N} sequential stores, backlog ${BACKLOG_N} (rss ${f0(process.memoryUsage().rss / 2 ** 20)} MiB)\n`);
  console.log(
    table(
      ['commit → delivery', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms'],
      [['engram (outbox, woken after commit)', f1(pct(latencies, 50)), f1(pct(latencies, 95)), f1(pct(latencies, 99)), f1(Math.max(...latencies))]],
    ),
  );
  console.log();
  console.log(
    table(
      ['throughput', 'deliveries/s', 'seconds'],
      [
        ['engram: outbox → signed delivery → delivery row', f0(BACKLOG_N / engramSeconds), f1(engramSeconds)],
        ['plain fetch to the same receiver (20 at a time)', f0(BACKLOG_N / plainSeconds), f1(plainSeconds)],
      ],
    ),
  );
  await receiver.close();
  await node.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
