/**
 * The agent runtime, measured through the API (app.request, no sockets):
 *   1. a mission transition (pause/resume of a running mission) p50/p95/p99, one at a time;
 *   2. a checkpoint create (with a small `state`) p50/p95/p99, one at a time;
 *   3. a mission rollback with `revert_memories` over 1,000 memories the agent wrote after the
 *      checkpoint (while another agent wrote 1,000 more that stay), beside a plain rollback
 *      (POST /v1/rollback) of 1,000 memories.
 * Embedded PGlite by default; DATABASE_URL (and REDIS_URL) to run on Postgres.
 *   npx tsx test/bench/runtime.ts [--transitions N] [--checkpoints N] [--memories N] [--runs N]
 */
import { f0, f2, inProcessEngram, pct, pool, table } from './lib';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const TRANSITIONS = arg('transitions', 1000);
const CHECKPOINTS = arg('checkpoints', 1000);
const MEMORIES = arg('memories', 1000);
const RUNS = arg('runs', 3);

const stats = (xs: number[]) => [f2(pct(xs, 50)), f2(pct(xs, 95)), f2(pct(xs, 99))];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const { node, call, newTenant } = await inProcessEngram();
  const timedMs = async (fn: () => Promise<unknown>) => {
    const t0 = performance.now();
    await fn();
    return performance.now() - t0;
  };
  const tenant = await newTenant();
  const key = tenant.api_key;
  await call('POST', '/v1/capabilities', key, { name: 'github-ops', tools: [{ name: 'github', description: 'GitHub' }], risk_levels: { github: 'medium' } });
  await call('POST', '/v1/agents', key, { agent_id: 'bench-agent', name: 'Bench', provider: 'openai', model: 'gpt-4.1', capabilities: ['github-ops'] });
  const mission = async () => {
    const m = (await call('POST', '/v1/missions', key, { agent_id: 'bench-agent', goal: 'Benchmark' })).mission_id as string;
    await call('POST', `/v1/missions/${m}/start`, key);
    return m;
  };

  // 1. Transitions: pause, resume, pause, ... of one running mission.
  const m1 = await mission();
  const verb = (i: number) => (i % 2 ? 'resume' : 'pause');
  for (let i = 0; i < 20; i++) await call('POST', `/v1/missions/${m1}/${verb(i)}`, key); // warm-up
  const transitions: number[] = [];
  for (let i = 0; i < TRANSITIONS; i++) transitions.push(await timedMs(() => call('POST', `/v1/missions/${m1}/${verb(i)}`, key)));

  // 2. Checkpoints of one mission.
  const m2 = await mission();
  const state = (i: number) => ({ step: i, plan: ['triage', 'label', 'assign'], notes: 'progress '.repeat(10) });
  for (let i = 0; i < 20; i++) await call('POST', `/v1/missions/${m2}/checkpoints`, key, { label: `warm ${i}`, state: state(i) });
  const checkpoints: number[] = [];
  for (let i = 0; i < CHECKPOINTS; i++)
    checkpoints.push(await timedMs(() => call('POST', `/v1/missions/${m2}/checkpoints`, key, { label: `step ${i}`, state: state(i) })));

  // 3. Scoped memory revert vs a plain rollback of the same size, each in a fresh tenant.
  const write = async (k: string, agent: string, n: number, tag: string) =>
    pool(
      Array.from({ length: n }, (_, i) => i),
      16,
      async (i) => {
        await call('POST', '/v1/memories', k, { observation: `${tag} memory ${i}: ${'detail '.repeat(8)}`, agent_id: agent });
      },
    );
  const scoped: number[] = [];
  const plain: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const t = await newTenant();
    await call('POST', '/v1/agents', t.api_key, { agent_id: 'writer', name: 'Writer', provider: 'anthropic', model: 'claude-sonnet-4' });
    const m = (await call('POST', '/v1/missions', t.api_key, { agent_id: 'writer', goal: 'Write' })).mission_id as string;
    await call('POST', `/v1/missions/${m}/start`, t.api_key);
    const cp = (await call('POST', `/v1/missions/${m}/checkpoints`, t.api_key, { label: 'before' })).checkpoint_id as string;
    await sleep(5);
    await write(t.api_key, 'writer', MEMORIES, 'mission');
    await write(t.api_key, 'bystander', MEMORIES, 'other');
    let reverted = 0;
    scoped.push(
      await timedMs(async () => {
        reverted = (await call('POST', `/v1/missions/${m}/rollback`, t.api_key, { checkpoint_id: cp, revert_memories: true })).memories_reverted;
      }),
    );
    if (reverted !== MEMORIES) throw new Error(`the mission rollback reverted ${reverted} memories, not ${MEMORIES}`);

    const p = await newTenant();
    const target = new Date().toISOString();
    await sleep(5);
    await write(p.api_key, 'writer', MEMORIES, 'plain');
    let undone = 0;
    plain.push(
      await timedMs(async () => {
        undone = (await call('POST', '/v1/rollback', p.api_key, { target })).operations_undone;
      }),
    );
    if (undone !== MEMORIES) throw new Error(`the plain rollback undid ${undone} memories, not ${MEMORIES}`);
  }

  console.log(
    `\nAgent runtime on ${node.services.storage}: ${TRANSITIONS} transitions, ${CHECKPOINTS} checkpoints, ${MEMORIES}-memory rollbacks × ${RUNS} (ms)\n`,
  );
  console.log(
    table(
      ['measure', 'p50', 'p95', 'p99'],
      [
        ['mission transition (pause/resume), API', ...stats(transitions)],
        ['checkpoint create (small state), API', ...stats(checkpoints)],
        [`mission rollback, revert_memories: ${MEMORIES} of the agent's (+${MEMORIES} another's kept)`, ...stats(scoped)],
        [`plain rollback of ${MEMORIES} memories (POST /v1/rollback)`, ...stats(plain)],
      ],
    ),
  );
  console.log(`\nscoped / plain (median): ${f2(pct(scoped, 50) / pct(plain, 50))}×`);
  const mem = process.memoryUsage();
  console.log(`memory: rss ${f0(mem.rss / 2 ** 20)} MB, heap ${f0(mem.heapUsed / 2 ** 20)} MB`);
  await node.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
