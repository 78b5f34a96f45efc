/**
 * Signed traces, measured through the API (app.request, no sockets) and beside their parts:
 *   1. step append p50/p95/p99, one at a time, beside the same SQL of an append alone (lock the
 *      trace row, insert the step, move the chain head, commit) and a bare INSERT of a step row;
 *   2. appends per second from 16 clients: on 16 traces, and all on one trace (its row lock);
 *   3. completion with its RSA-4096 signature, beside the signing alone;
 *   4. verify of a 1,000-step trace, beside rehashing the same steps with node:crypto alone.
 * Embedded PGlite by default; DATABASE_URL (and REDIS_URL) to run on Postgres.
 *   npx tsx test/bench/traces.ts [--appends N] [--completions N]
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { sql } from 'drizzle-orm';
import { newId } from '../../shared/platform/contract/ids';
import { f0, f1, f2, inProcessEngram, pct, pool, SMOKE, table } from './lib';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const APPENDS = arg('appends', 1000);
const COMPLETIONS = arg('completions', 50);
const VERIFY_STEPS = SMOKE ? 20 : 1000;

const stats = (xs: number[]) => [f2(pct(xs, 50)), f2(pct(xs, 95)), f2(pct(xs, 99))];

async function main() {
  const { node, call, newTenant } = await inProcessEngram();
  const db = node.services.db;
  const tenant = await newTenant();
  const key = tenant.api_key as string;
  const start = async () => (await call('POST', '/v1/traces', key, { agent_id: 'bench' })).trace_id as string;
  const step = (i: number) => ({ type: i % 3 ? 'THOUGHT' : 'ACTION', content: `step ${i}: ${'reasoning '.repeat(20)}`, metadata: { i, tool: 'bench' } });
  const timedMs = async (fn: () => Promise<unknown>) => {
    const t0 = performance.now();
    await fn();
    return performance.now() - t0;
  };
  const signingKey = await node.services.signingKey(); // generated now, not inside a measurement

  // 1. One append at a time, through the API and as bare SQL.
  const trace = await start();
  for (let i = 0; i < 20; i++) await call('POST', `/v1/traces/${trace}/steps`, key, step(i)); // warm-up
  const api: number[] = [];
  for (let i = 20; i < APPENDS + 20; i++) api.push(await timedMs(() => call('POST', `/v1/traces/${trace}/steps`, key, step(i))));

  const sqlTrace = await start();
  const appendSql: number[] = [];
  const bareInsert: number[] = [];
  const hash = '0'.repeat(64);
  for (let i = 0; i < APPENDS; i++) {
    appendSql.push(
      await timedMs(() =>
        db.transaction(async (tx) => {
          await tx.execute(sql`SELECT step_count, last_chain_hash FROM traces WHERE tenant_id = ${tenant.tenant_id} AND id = ${sqlTrace} FOR UPDATE`);
          await tx.execute(sql`INSERT INTO trace_steps (id, tenant_id, trace_id, step_index, type, content, metadata, integrity_hash, previous_chain_hash, chain_hash, created_at)
            VALUES (${newId('step')}, ${tenant.tenant_id}, ${sqlTrace}, ${i}, 'THOUGHT', ${step(i).content}, ${JSON.stringify(step(i).metadata)}::jsonb, ${hash}, ${hash}, ${hash}, now())`);
          await tx.execute(
            sql`UPDATE traces SET step_count = ${i + 1}, last_chain_hash = ${hash}, last_activity_at = now() WHERE tenant_id = ${tenant.tenant_id} AND id = ${sqlTrace}`,
          );
        }),
      ),
    );
    bareInsert.push(
      await timedMs(() =>
        db.execute(sql`INSERT INTO trace_steps (id, tenant_id, trace_id, step_index, type, content, metadata, integrity_hash, previous_chain_hash, chain_hash, created_at)
          VALUES (${newId('step')}, ${tenant.tenant_id}, ${sqlTrace}, ${APPENDS + i}, 'THOUGHT', ${step(i).content}, ${JSON.stringify(step(i).metadata)}::jsonb, ${hash}, ${hash}, ${hash}, now())`),
      ),
    );
  }

  // 2. Throughput from 16 clients: spread over 16 traces, and all on one.
  const throughput = async (traces: string[]) => {
    const t0 = performance.now();
    await pool(
      Array.from({ length: APPENDS }, (_, i) => i),
      16,
      async (i) => {
        await call('POST', `/v1/traces/${traces[i % traces.length]}/steps`, key, step(i));
      },
    );
    return APPENDS / ((performance.now() - t0) / 1000);
  };
  const spread = await throughput(await Promise.all(Array.from({ length: 16 }, start)));
  const single = await throughput([await start()]);

  // 3. Completion (with 10 steps) and the signature alone.
  const complete: number[] = [];
  const signOnly: number[] = [];
  for (let n = 0; n < COMPLETIONS; n++) {
    const t = await start();
    for (let i = 0; i < 10; i++) await call('POST', `/v1/traces/${t}/steps`, key, step(i));
    complete.push(await timedMs(() => call('POST', `/v1/traces/${t}/complete`, key)));
    signOnly.push(await timedMs(() => signingKey.sign(createHash('sha256').update(String(n)).digest('hex'))));
  }

  // 4. Verify of a 1,000-step trace, and the same rehash with node:crypto alone.
  const big = await start();
  await pool(
    Array.from({ length: VERIFY_STEPS }, (_, i) => i),
    8,
    async (i) => {
      await call('POST', `/v1/traces/${big}/steps`, key, step(i));
    },
  );
  await call('POST', `/v1/traces/${big}/complete`, key);
  const verify: number[] = [];
  for (let n = 0; n < 20; n++) {
    const [ms, result] = await (async () => {
      const t0 = performance.now();
      const r = await call('POST', `/v1/traces/${big}/verify`, key);
      return [performance.now() - t0, r] as const;
    })();
    if (!result.valid) throw new Error('the benchmark trace does not verify');
    verify.push(ms);
  }
  const { steps } = await call('GET', `/v1/traces/${big}?steps_limit=${VERIFY_STEPS}`, key);
  const rehash: number[] = [];
  for (let n = 0; n < 20; n++) {
    rehash.push(
      await timedMs(async () => {
        let chain = '';
        for (const s of steps) {
          const ih = createHash('sha256')
            .update(canonicalize({ trace_id: big, step_index: s.step_index, type: s.type, content: s.content, metadata: s.metadata })!)
            .digest('hex');
          chain = createHash('sha256')
            .update(chain + ih)
            .digest('hex');
        }
      }),
    );
  }

  console.log(`\nSigned traces on ${node.services.storage}, ${APPENDS} appends, ${COMPLETIONS} completions (ms)\n`);
  console.log(
    table(
      ['measure', 'p50', 'p95', 'p99'],
      [
        ['step append, API (one client)', ...stats(api)],
        ['  its SQL alone: lock trace, insert step, move head, commit', ...stats(appendSql)],
        ['  a bare INSERT of a step row (no lock, no transaction)', ...stats(bareInsert)],
        ['complete: seal + RSA-4096 PSS signature, API', ...stats(complete)],
        ['  the signature alone (WebCrypto)', ...stats(signOnly)],
        [`verify a ${VERIFY_STEPS.toLocaleString('en')}-step trace, API`, ...stats(verify)],
        [`  rehash of the same ${VERIFY_STEPS.toLocaleString('en')} steps, node:crypto alone`, ...stats(rehash)],
      ],
    ),
  );
  console.log(`\nappends/s from 16 clients: ${f0(spread)} over 16 traces, ${f0(single)} on one trace (${f1(single / spread)}×)`);
  const mem = process.memoryUsage();
  console.log(`memory: rss ${f0(mem.rss / 2 ** 20)} MB, heap ${f0(mem.heapUsed / 2 ** 20)} MB`);
  await node.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
