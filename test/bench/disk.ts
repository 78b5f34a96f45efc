/**
 * bench:disk — the bytes each relation grows by per memory stored through the API, in one run.
 *
 *   DATABASE_URL=postgres://.../engram_disk npm run bench:disk -- [--stores 2000] [--clients 4] [--maintain-every 100]
 *
 * Starts the real server (functions/node.ts, hash embedder) on DATABASE_URL, stores `--stores`
 * memories into one tenant with POST /v1/memories, then prints every table, its TOAST and each of its
 * indexes by how much it grew, divided by the memories stored. The database should be one of its own:
 * other writers would count too.
 *
 * What a running deployment keeps: every `--maintain-every` stores, and once at the end, the bench
 * runs the scheduled maintenance (the tasks the cron and the Node timer run, functions/registry.ts),
 * which folds the keyword-search corpus statistics each store adds, then vacuums that table as
 * autovacuum would once a fold leaves its threshold of dead rows (their space is reused, not
 * returned: folded once at the end, the table would keep every delta's pages).
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { maintenanceTasks } from '../../functions/registry';
import { parseConfig } from '../../shared/platform/contract/config';
import { createNodeServices } from '../../shared/node/services';
import { f0, f1, pool, rng, table } from './lib';
import { ADMIN_TOKEN, call, createTenant, load, observation, startServer } from './scale-lib';

const { values: args } = parseArgs({
  options: { stores: { type: 'string', default: '2000' }, clients: { type: 'string', default: '4' }, 'maintain-every': { type: 'string', default: '100' } },
});
const MAINTAIN_EVERY = Number(args['maintain-every']);
const STORES = Number(args.stores);
const CLIENTS = Number(args.clients);
const DATABASE_URL = process.env.DATABASE_URL;
if (!DATABASE_URL) throw new Error('DATABASE_URL: a database of its own for this bench');

const db = new pg.Client({ connectionString: DATABASE_URL });
const q = async <T = Record<string, any>>(text: string, params?: unknown[]) => (await db.query(text, params)).rows as T[];

/** Every relation of the public schema with its size: tables (heap only), their TOAST, their indexes. */
async function sizes(): Promise<Map<string, number>> {
  const rows = await q<{ name: string; bytes: string }>(
    `SELECT t.relname || ': heap' AS name, pg_relation_size(t.oid) AS bytes
       FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace WHERE n.nspname = 'public' AND t.relkind = 'r'
     UNION ALL
     SELECT t.relname || ': TOAST', pg_total_relation_size(t.reltoastrelid)
       FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace WHERE n.nspname = 'public' AND t.relkind = 'r' AND t.reltoastrelid <> 0
     UNION ALL
     SELECT t.relname || ': ' || i.relname, pg_relation_size(i.oid)
       FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
       JOIN pg_namespace n ON n.oid = t.relnamespace WHERE n.nspname = 'public' AND t.relkind = 'r'`,
  );
  return new Map(rows.map((r) => [r.name, Number(r.bytes)]));
}

await db.connect();
const server = await startServer({ DATABASE_URL, REDIS_URL: process.env.REDIS_URL });
// The maintenance, as the server's own timer would run it every 15 minutes: its runner is never started.
const maintenance = await createNodeServices(parseConfig({ DATABASE_URL, ADMIN_TOKEN, EMBEDDING_PROVIDER: 'hash', LOG_LEVEL: 'error' }), {
  maintenance: maintenanceTasks,
});
let folded = 0;
let maintained = 0;
async function maintain() {
  folded += (await maintenance.runner.maintain()).corpus_statistics ?? 0;
  await maintenance.database.query('VACUUM memory_corpus_stats', []);
  maintained++;
}
try {
  const tenant = await createTenant(server.url, 'disk');
  const r = rng(5);
  let n = 0;
  const store = () => call('POST', `${server.url}/v1/memories`, tenant.key, { observation: observation(r, ++n) });
  for (let i = 0; i < 20; i++) await store();
  await q('VACUUM ANALYZE');
  const before = await sizes();
  const loadBefore = load();
  await pool(
    Array.from({ length: STORES }, (_, i) => i),
    CLIENTS,
    async (i) => {
      await store();
      if ((i + 1) % MAINTAIN_EVERY === 0) await maintain();
    },
  );
  await maintain();
  await q('VACUUM ANALYZE');
  const after = await sizes();
  const grown = [...after].map(([name, bytes]) => [name, bytes - (before.get(name) ?? 0)] as const).filter(([, b]) => b > 0);
  grown.sort((a, b) => b[1] - a[1]);
  const total = grown.reduce((s, [, b]) => s + b, 0);
  const byTable = new Map<string, number>();
  for (const [name, b] of grown) byTable.set(name.split(':')[0], (byTable.get(name.split(':')[0]) ?? 0) + b);
  console.log(`\n### Disk per memory stored through the API (${STORES} stores, ${CLIENTS} clients, load average ${loadBefore} → ${load()})\n`);
  console.log(
    `As a running deployment keeps it: the scheduled maintenance ran ${maintained} times (every ${MAINTAIN_EVERY} stores and at the end; corpus statistics folded ${folded} times), each followed by VACUUM memory_corpus_stats, then VACUUM ANALYZE.\n`,
  );
  console.log(
    table(
      ['relation', 'bytes per memory'],
      grown.map(([name, b]) => [name, f0(b / STORES)]),
    ),
  );
  console.log('\nBy table:\n');
  console.log(
    table(
      ['table', 'bytes per memory'],
      [...byTable].sort((a, b) => b[1] - a[1]).map(([name, b]) => [name, f0(b / STORES)]),
    ),
  );
  console.log(
    `\nAll relations together: ${f0(total / STORES)} bytes per memory (${f1(total / STORES / 1024)} KB), ${f1(((total / STORES) * 1e6) / 2 ** 30)} GB a million.`,
  );
} finally {
  await maintenance.close();
  await server.stop();
  await db.end();
}
