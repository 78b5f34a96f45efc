/**
 * Store latency on the embedded default with PGlite's own settings (fsync off) and with durable
 * commits (fsync on, `shared/node/pglite-durable.ts`), side by side.
 *
 *   npx tsx test/bench/durability.ts [--stores 300] [--dir <parent directory on the disk to measure>]
 *
 * Each mode gets a fresh data directory under --dir (default: the repository, i.e. the disk
 * `./.data` lives on), the hash embedder, one tenant, and sequential `POST /v1/memories` through
 * the app in process (no HTTP), after 20 warm-up stores.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildApp } from '../../functions/app';
import { jobHandlers } from '../../functions/registry';
import { openPglite } from '../../shared/node/database';
import { DurableNodeFS } from '../../shared/node/pglite-durable';
import { createNodeServices } from '../../shared/node/services';
import { parseConfig } from '../../shared/platform/contract/config';
import { createLogger } from '../../shared/platform/data/log';
import { f1, f2, pct, SMOKE, table } from './lib';

const { values } = parseArgs({
  options: { stores: { type: 'string', default: '300' }, dir: { type: 'string', default: new URL('../..', import.meta.url).pathname } },
});
const STORES = Number(values.stores);
const ADMIN = 'bench-admin-token-0123456789';

async function measure(durable: boolean) {
  const dir = await mkdtemp(join(values.dir!, '.bench-durability-'));
  try {
    const config = parseConfig({ ADMIN_TOKEN: ADMIN, DATA_DIR: dir, EMBEDDING_PROVIDER: 'hash', LOG_LEVEL: 'silent', RATE_LIMIT_SCALE: '100' });
    const log = createLogger('silent');
    const database = await openPglite({ dataDir: dir, durable });
    const node = await createNodeServices(config, { database, log, jobHandlers: jobHandlers(config, log), maintenance: {} });
    const app = buildApp(() => node.services);
    const call = (method: string, path: string, key: string, body: unknown) =>
      app.request(path, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const tenant = (await (await call('POST', '/admin/v1/tenants', ADMIN, { email: `bench-${durable}@example.com`, tier: 'enterprise' })).json()) as {
      api_key: string;
    };
    const fs = database.client.fs as unknown;
    const syncs = () => (fs instanceof DurableNodeFS ? fs.syncs : 0);
    const store = async (i: number) => {
      const res = await call('POST', '/v1/memories', tenant.api_key, {
        observation: `durability bench memory ${i} ${'lorem ipsum '.repeat(8)}`,
        auto_link: false,
      });
      if (res.status !== 201) throw new Error(`store ${i}: ${res.status} ${await res.text()}`);
    };
    for (let i = 0; i < 20; i++) await store(-i - 1);
    const syncsBefore = syncs();
    const ms: number[] = [];
    const started = performance.now();
    for (let i = 0; i < STORES; i++) {
      const t0 = performance.now();
      await store(i);
      ms.push(performance.now() - t0);
    }
    const seconds = (performance.now() - started) / 1000;
    const perStore = (syncs() - syncsBefore) / STORES;
    await node.close();
    return { p50: pct(ms, 50), p95: pct(ms, 95), p99: pct(ms, 99), rate: STORES / seconds, perStore };
  } finally {
    await rm(dir, { recursive: true, force: true, maxRetries: 5 });
  }
}

const rows: string[][] = [];
// Alternate the modes twice so a change in machine load hits both.
const results: Record<string, Awaited<ReturnType<typeof measure>>[]> = { 'PGlite default (fsync off)': [], 'durable (fsync on)': [] };
for (let round = 0; round < (SMOKE ? 1 : 2); round++) {
  results['PGlite default (fsync off)'].push(await measure(false));
  results['durable (fsync on)'].push(await measure(true));
}
for (const [mode, runs] of Object.entries(results)) {
  for (const [i, r] of runs.entries()) rows.push([mode, String(i + 1), f1(r.p50), f1(r.p95), f1(r.p99), f1(r.rate), f2(r.perStore)]);
}
console.log(`${STORES} sequential stores per run, hash embedder, data under ${values.dir}\n`);
console.log(table(['mode', 'run', 'p50 ms', 'p95 ms', 'p99 ms', 'stores/s', 'fsyncs per store'], rows));
