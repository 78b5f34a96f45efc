/**
 * bench:scale's third part: store and batch throughput into the loaded table, what every table grew
 * by per memory stored through the API, disk per table extrapolated to a million memories, and the
 * server's memory.
 */
import { f0, f1, pct, pool, rng, table, timed } from './lib';
import { call, load, observation, type Server } from './scale-lib';

type Query = <T = Record<string, any>>(text: string, params?: unknown[]) => Promise<T[]>;
interface Tenant {
  key: string;
  tenantId: string;
}

const STORES = 400;
const STREAMS = 16;
const BATCHES = 12;
const BATCH = 100;

const allTablesBytes = async (q: Query) =>
  Number(
    (
      await q<{ b: string }>(
        `SELECT sum(pg_total_relation_size(c.oid)) AS b FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND n.nspname = 'public'`,
      )
    )[0].b,
  );

export async function throughputAndDisk(opts: { server: Server; q: Query; big: Tenant; small: Tenant[]; total: number; each: number }) {
  const { server, q, big, small, total } = opts;
  const r = rng(11);
  let n = 10_000_000;
  const store = (key: string) => call('POST', `${server.url}/v1/memories`, key, { observation: observation(r, ++n) });
  const batch = (key: string) =>
    call('POST', `${server.url}/v1/memories/batch`, key, { memories: Array.from({ length: BATCH }, () => ({ observation: observation(r, ++n) })) });
  for (let i = 0; i < 10; i++) await store(big.key);
  const bytesBefore = await allTablesBytes(q);
  let stored = 0;
  const rows: string[][] = [];
  const run = async (label: string, count: number, streams: number, keys: string[], per: number, fn: (key: string) => Promise<unknown>) => {
    const latencies: number[] = [];
    let k = 0;
    const [, ms] = await timed(() =>
      pool(
        Array.from({ length: count }, (_, i) => i),
        streams,
        async () => {
          const [, t] = await timed(() => fn(keys[k++ % keys.length]));
          latencies.push(t);
        },
      ),
    );
    stored += count * per;
    rows.push([
      label,
      String(count * per),
      f0((count * per) / (ms / 1000)),
      `${f1(pct(latencies, 50))} / ${f1(pct(latencies, 95))} / ${f1(pct(latencies, 99))}`,
      load(),
    ]);
  };
  await run('POST /v1/memories, 1 client, the big tenant', STORES, 1, [big.key], 1, store);
  await run(`POST /v1/memories, ${STREAMS} clients, the big tenant`, STORES * 2, STREAMS, [big.key], 1, store);
  await run(
    `POST /v1/memories, ${STREAMS} clients over ${STREAMS} small tenants`,
    STORES * 2,
    STREAMS,
    small.slice(0, STREAMS).map((t) => t.key),
    1,
    store,
  );
  await run(`POST /v1/memories/batch (${BATCH} a request), 1 client, the big tenant`, BATCHES, 1, [big.key], BATCH, batch);
  await run(
    `POST /v1/memories/batch (${BATCH} a request), 4 clients over 4 small tenants`,
    BATCHES,
    4,
    small.slice(0, 4).map((t) => t.key),
    BATCH,
    batch,
  );
  const grown = (await allTablesBytes(q)) - bytesBefore;
  console.log(`\n### Stores into a table of ${total.toLocaleString('en')} memories (auto_link on, the default)\n`);
  console.log(table(['what', 'memories', 'memories/s', 'latency p50 / p95 / p99 ms', 'load average'], rows));
  console.log(
    `\nEvery table together grew by ${f0(grown / stored)} bytes per memory stored through the API (${stored} memories: the row, its event, state, postings, audit entry, stream event, indexes), ${f1(((grown / stored) * 1e6) / 2 ** 30)} GB a million.`,
  );

  await q('VACUUM ANALYZE memories, memory_events, memory_postings');
  const sizes = await q<{ name: string; bytes: string }>(
    `SELECT c.relname AS name, pg_total_relation_size(c.oid) AS bytes FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND c.relkind = 'r' ORDER BY pg_total_relation_size(c.oid) DESC LIMIT 8`,
  );
  const parts = await q<{ name: string; bytes: string }>(
    `SELECT 'memories: heap' AS name, pg_relation_size('memories') AS bytes
     UNION ALL SELECT 'memories: TOAST', pg_total_relation_size(reltoastrelid) FROM pg_class WHERE oid = 'memories'::regclass
     UNION ALL SELECT 'memories: ' || indexrelid::regclass::text, pg_relation_size(indexrelid) FROM pg_index WHERE indrelid = 'memories'::regclass`,
  );
  const [{ memories }] = await q<{ memories: string }>('SELECT count(*) AS memories FROM memories');
  const count = Number(memories);
  const per = (b: string) => f1(((Number(b) / count) * 1e6) / 2 ** 30);
  const mb = (b: string) => f0(Number(b) / 2 ** 20);
  const rss = await server.rss();
  console.log(`\n### Disk at ${count.toLocaleString('en')} memories, and per million (measured size / rows × 1,000,000)\n`);
  console.log(
    table(
      ['relation', 'MB', 'GB per million memories'],
      [
        ...sizes.map((s) => [s.name, mb(s.bytes), per(s.bytes)]),
        ...parts.filter((p) => Number(p.bytes) > 8192 * 4).map((p) => [p.name, mb(p.bytes), per(p.bytes)]),
      ],
    ),
  );
  const [{ db }] = await q<{ db: string }>('SELECT pg_database_size(current_database()) AS db');
  console.log(`\nwhole database ${mb(db)} MB (${per(db)} GB per million memories); server RSS ${rss.rss} MB, peak ${rss.peak} MB`);
}
