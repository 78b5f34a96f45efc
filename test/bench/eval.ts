/**
 * Eval (experimental) at scale: `POST /v1/eval/run` through the app in process on Postgres, for a
 * tenant holding N memories (random unit 512-d vectors made in SQL from uniform coordinates, 1% exact duplicates and 1% near
 * duplicates, created over 60 days, a tenth recalled), beside `GET /v1/usage` in the same process.
 * Memories are loaded with SQL (not through the API) and indexed in the HNSW graph first, as a
 * store of that size would be. Needs DATABASE_URL (Postgres 15 + pgvector).
 *   DATABASE_URL=postgres://... npx tsx test/bench/eval.ts [--sizes 10000,100000] [--runs 5]
 */
import { sql } from 'drizzle-orm';
import { loadavg } from 'node:os';
import { probeNeighbours } from '../../shared/memory/cortex';
import { f0, f1, indexDefinition, inProcessEngram, pct, table, timed } from './lib';

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const SIZES = arg('sizes', '10000,100000').split(',').map(Number);
const RUNS = Number(arg('runs', '5'));

async function main() {
  if (!process.env.DATABASE_URL) throw new Error('bench:eval runs on Postgres: set DATABASE_URL');
  const engram = await inProcessEngram({ SVC_ENABLE_EXPERIMENTAL: '1' });
  const db = engram.node.services.db;
  const indexSql = await indexDefinition('memories_embedding_idx');
  const rowsOut: string[][] = [];
  const cortexRows: string[][] = [];
  for (const n of SIZES) {
    const tenant = await engram.newTenant('enterprise');
    const tid = tenant.tenant_id;
    // Loaded without the HNSW index, which is then built in one pass (as a restore would): row by
    // row inserts into the graph take most of an hour at 100k on this machine.
    await db.execute(sql.raw('DROP INDEX IF EXISTS memories_embedding_idx'));
    const [, loadMs] = await timed(() =>
      db.execute(sql`
        INSERT INTO memories (id, tenant_id, observation, tags, importance, confidence, recall_count, last_recalled_at, content_hash, embedding, version, created_at, updated_at)
        SELECT gen_random_uuid(), ${tid}, 'memory ' || g, ARRAY['t' || (g % 20)], 1 + g % 10, 1,
               CASE WHEN g % 10 = 0 THEN 3 ELSE 0 END,
               CASE WHEN g % 10 = 0 THEN now() - interval '1 day' ELSE NULL END,
               md5('memory ' || g),
               l2_normalize(ARRAY(SELECT random() - 0.5 + 0 * g FROM generate_series(1, 512))::vector(512)),
               1, now() - (g % 60) * interval '1 day', now() - (g % 60) * interval '1 day'
        FROM generate_series(1, ${n}) g`),
    );
    // 1% exact duplicates (same hash and vector) and 1% near duplicates (same vector, other text).
    await db.execute(sql`
      INSERT INTO memories (id, tenant_id, observation, tags, importance, confidence, recall_count, content_hash, embedding, version, created_at, updated_at)
      SELECT gen_random_uuid(), tenant_id, observation || CASE WHEN k = 1 THEN '' ELSE ' (again)' END, tags, importance, 1, 0,
             CASE WHEN k = 1 THEN content_hash ELSE md5(observation || ' (again)') END, embedding, 1, now(), now()
      FROM (SELECT * FROM memories WHERE tenant_id = ${tid} ORDER BY random() LIMIT ${Math.round(n / 50)}) m,
           LATERAL (SELECT 1 + (random() < 0.5)::int AS k) x`);
    const [, buildMs] = await timed(() => db.execute(sql.raw(indexSql)));
    await db.execute(sql`ANALYZE memories`);
    // The near-duplicate index, as the maintenance task builds it in the background for a store this size.
    const [probed, primeMs] = await timed(() => probeNeighbours(db, tid, new Date()));
    const runs: number[] = [];
    const usage: number[] = [];
    let last: any = null;
    for (let i = 0; i < RUNS; i++) {
      const [result, ms] = await timed(() => engram.call('POST', '/v1/eval/run', tenant.api_key, {}));
      last = result;
      runs.push(ms);
      usage.push((await timed(() => engram.call('GET', '/v1/usage', tenant.api_key)))[1]);
    }
    // Steady state: 100 memories stored through the API since the last probes, which the eval probes itself.
    for (let i = 0; i < 100; i++) await engram.call('POST', '/v1/memories', tenant.api_key, { observation: `fresh memory ${i}`, auto_link: false });
    const [, freshMs] = await timed(() => engram.call('POST', '/v1/eval/run', tenant.api_key, {}));
    const [dry, dryMs] = await timed(() => engram.call('POST', '/v1/cortex/run?dry_run=true', tenant.api_key));
    const [ran, cortexMs] = await timed(() => engram.call('POST', '/v1/cortex/run', tenant.api_key));
    // The changes beyond the first CORTEX_BATCH are jobs: the runner applies them after the answer.
    const [, drainMs] = await timed(() => engram.node.runner.drain());
    cortexRows.push([
      n.toLocaleString('en'),
      f0(dryMs),
      f0(cortexMs),
      `${ran.queued_changes} in ${f1(drainMs / 1000)} s (${f0(ran.queued_changes / (drainMs / 1000))}/s)`,
      `consolidated ${dry.consolidated}, boosted ${dry.boosted}, decayed ${dry.decayed}`,
    ]);
    rowsOut.push([
      `${n.toLocaleString('en')} (+${Math.round(n / 50)} duplicates)`,
      `${f1(loadMs / 1000)} + ${f1(buildMs / 1000)}`,
      `${f1(primeMs / 1000)} (${f0(probed / (primeMs / 1000))}/s)`,
      f0(freshMs),
      f0(pct(runs, 50)),
      f0(Math.max(...runs)),
      f1(pct(usage, 50)),
      `health ${last.health_score}, conflicts ${last.conflict_count}, stale ${last.stale_count}`,
    ]);
    console.error(`done ${n}:`, rowsOut.at(-1)?.join(' | '), '||', cortexRows.at(-1)?.join(' | '));
  }
  console.log(`\nPOST /v1/eval/run on Postgres, ${RUNS} runs per size (target ≤ 2 s at 100k)\n`);
  console.log(
    table(
      [
        'memories',
        'load s + HNSW build s',
        'near-duplicate index s (probes/s)',
        'eval after 100 new ms',
        'eval p50 ms',
        'eval max ms',
        'GET /v1/usage p50 ms',
        'result',
      ],
      rowsOut,
    ),
  );
  console.log(`\nPOST /v1/cortex/run on Postgres, once per size after the evals\n`);
  console.log(table(['memories', 'dry run ms', 'run ms (answer)', 'queued changes applied', 'changes'], cortexRows));
  console.log(
    `\nload average: ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
  await engram.node.close?.();
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
