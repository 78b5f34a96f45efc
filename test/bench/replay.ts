/**
 * Replay benchmark on real Postgres: one tenant with N memories (default 100k) and about 5·N
 * memory events, bulk-loaded with SQL, then the replay routes timed in-process (app.request, the
 * whole HTTP stack minus the socket) and the snapshot statement alone.
 *
 *   DATABASE_URL=postgres://... npx tsx test/bench/replay.ts [--memories 100000] [--runs 15] [--keep]
 *
 * It creates its own database `engram_bench_replay` next to the one DATABASE_URL names (dropped at
 * the end unless --keep), so the database of the tests is never touched. `--explain` prints the
 * snapshot statement's plan (EXPLAIN ANALYZE, BUFFERS) at the newest moment. `--recall-only` times only counterfactual
 * recall (and the full-scan statement it replaced, checking both give the same answer).
 * Events per memory: 1 create (with a random unit 512-d embedding), 1.5 updates (half with an
 * embedding), 0.2 deletes, 2 recalls, 0.3 links; creates spread over 20 days, changes after them.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { type SQL, sql } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import pg from 'pg';
import { buildApp } from '../../functions/app';
import { jobHandlers, maintenanceTasks } from '../../functions/registry';
import { recallCandidates } from '../../functions/replay/queries';
import { snapshotPage, snapshotQuery } from '../../functions/replay/snapshot';
import { parseConfig } from '../../shared/platform/contract/config';
import { type Db, type DbOrTx, rows } from '../../shared/platform/data/db';
import { embedAll, hashEmbedder } from '../../shared/memory/embeddings';
import { analyticSettings, embeddingOfState, latestStateEvents, presentAt } from '../../shared/memory/history';
import { vectorLiteral } from '../../shared/memory/rows';
import { snapshotSettings } from '../../shared/memory/edge-history';
import { createLogger } from '../../shared/platform/data/log';
import { rebuildReplayIntervals } from '../../shared/memory/intervals';
import { openPostgres } from '../../shared/node/database';
import { createNodeServices } from '../../shared/node/services';

const { values: args } = parseArgs({
  options: {
    memories: { type: 'string', default: '100000' },
    runs: { type: 'string', default: '15' },
    keep: { type: 'boolean', default: false },
    explain: { type: 'boolean', default: false },
    'recall-only': { type: 'boolean', default: false },
  },
});
const N = Number(args.memories);
const RUNS = Number(args.runs);
if (!process.env.DATABASE_URL) throw new Error('needs DATABASE_URL (a Postgres with pgvector)');
const DB = 'engram_bench_replay';
const adminUrl = new URL(process.env.DATABASE_URL);
const benchUrl = new URL(process.env.DATABASE_URL);
benchUrl.pathname = `/${DB}`;

async function admin(text: string) {
  const client = new pg.Client({ connectionString: adminUrl.toString() });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

const ADMIN_TOKEN = `bench-admin-${crypto.randomUUID()}`;
const log = createLogger('silent');
const ms = (t0: number) => performance.now() - t0;

async function timed(label: string, fn: () => Promise<unknown>) {
  await fn(); // warm
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    await fn();
    times.push(ms(t0));
  }
  times.sort((a, b) => a - b);
  const pick = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))].toFixed(1);
  console.log(`${label.padEnd(58)} median ${pick(0.5).padStart(8)} ms   p90 ${pick(0.9).padStart(8)} ms`);
}

/**
 * The snapshot statement on a connection of its own, timed by the wall clock and by the CPU its
 * Postgres backend used (/proc/<pid>/schedstat, nanoseconds on CPU; needs the server on this
 * machine). On a busy machine the CPU time is the better estimate of the quiet wall time.
 */
async function statementTimed(label: string, client: pg.Client, pid: number, statement: SQL, planner = 'SET LOCAL enable_seqscan = off') {
  const { sql: text, params } = new PgDialect().sqlToQuery(statement);
  const onCpu = () => Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
  const run = async () => {
    await client.query('BEGIN');
    await client.query(`SET LOCAL jit = off; SET LOCAL max_parallel_workers_per_gather = 0; SET LOCAL work_mem = '32MB'; ${planner}`);
    await client.query(text, params);
    await client.query('COMMIT');
  };
  await run();
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const [t0, c0] = [performance.now(), onCpu()];
    await run();
    wall.push(ms(t0));
    cpu.push(onCpu() - c0);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)].toFixed(1);
  console.log(`${label.padEnd(58)} median ${median(wall).padStart(8)} ms   backend CPU ${median(cpu).padStart(8)} ms`);
}

await admin(`DROP DATABASE IF EXISTS ${DB}`);
await admin(`CREATE DATABASE ${DB}`);
const database = openPostgres(benchUrl.toString(), 5);
let closed = false;
try {
  await database.migrate();
  const config = parseConfig({
    DATABASE_URL: benchUrl.toString(),
    ADMIN_TOKEN,
    EMBEDDING_PROVIDER: 'hash',
    LOG_LEVEL: 'silent',
    RATE_LIMIT_SCALE: '1000',
    DATA_DIR: 'memory://',
  });
  const node = await createNodeServices(config, { database, log, jobHandlers: jobHandlers(config, log), maintenance: maintenanceTasks });
  const app = buildApp(() => node.services);
  const request = async (path: string, key: string) => {
    const res = await app.request(path, { headers: { authorization: `Bearer ${key}` } });
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<any>;
  };
  const created = await app.request('/admin/v1/tenants', {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ email: `bench-${crypto.randomUUID().slice(0, 8)}@example.com`, tier: 'enterprise' }),
  });
  const { tenant_id: tenantId, api_key: key } = (await created.json()) as { tenant_id: string; api_key: string };
  const db = node.services.db;
  const now = node.services.clock.now();
  const base = new Date(now.getTime() - 30 * 86_400_000);

  const t0 = performance.now();
  // Snapshot DTOs as the service writes them; created_at of memory i is base + i·(20 days / N).
  const dto = (obs: string) =>
    sql.raw(`jsonb_build_object('uuid', 'urn:uuid:' || md5('m' || i)::uuid, 'observation', ${obs},
      'tags', jsonb_build_array('t' || (i % 10)), 'importance', 1 + i % 10, 'confidence', 1, 'recall_count', 0, 'last_recalled_at', null,
      'superseded_by', null, 'context', null, 'agent_id', 'agent-' || (i % 5), 'space_id', null, 'hash', md5(${obs}),
      'owner_tenant_id', '${tenantId}', 'expires_at', null,
      'created_at', to_char(c AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'updated_at', to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))`);
  const created_at = sql.raw(`'${base.toISOString()}'::timestamptz + (i * ${((20 * 86_400_000) / N).toFixed(3)}) * interval '1 millisecond'`);
  const vector = sql.raw(`(SELECT array_agg(random() - 0.5 + 0 * i + 0 * g) FROM generate_series(1, 512) g)::vector`);
  const insert = (kind: string, rowsSql: ReturnType<typeof sql>) =>
    db.execute(sql`INSERT INTO memory_events (tenant_id, memory_id, kind, at, actor, before, after, embedding, metadata)
                   SELECT ${tenantId}, md5('m' || i)::uuid, ${kind}, at, 'bench', b, a, v, meta FROM (${rowsSql}) s`);
  const creates = sql`SELECT i, c, at, NULL::jsonb AS b, ${dto(`'memory ' || i || ' ' || md5(i::text)`)} AS a, ${vector} AS v, '{}'::jsonb AS meta
                      FROM generate_series(1, ${N}) i, LATERAL (SELECT ${created_at} AS c) x, LATERAL (SELECT c AS at) y`;
  await insert('create', sql`SELECT i, at, b, a, v, meta FROM (${creates}) y`);
  const updates = sql`SELECT i, c, at, NULL::jsonb AS b, ${dto(`'changed ' || k || ' ' || md5(k::text)`)} AS a,
                        CASE WHEN k % 2 = 0 THEN ${vector} END AS v, '{}'::jsonb AS meta
                      FROM generate_series(1, ${Math.round(N * 1.5)}) k,
                      LATERAL (SELECT 1 + (k::bigint * 7919) % ${N} AS i) j, LATERAL (SELECT ${created_at} AS c) x,
                      LATERAL (SELECT c + (1 + k % 5000) * interval '1 minute' AS at) y`;
  await insert('update', sql`SELECT i, at, b, a, v, meta FROM (${updates}) z WHERE at < ${now.toISOString()}::timestamptz`);
  await insert(
    'delete',
    sql`SELECT i, c + interval '5 days' AS at, jsonb_build_object('observation', 'gone ' || i) AS b, NULL::jsonb AS a, NULL::vector AS v,
                               '{"links": []}'::jsonb AS meta
                             FROM generate_series(1, ${N}, 5) i, LATERAL (SELECT ${created_at} AS c) x`,
  );
  await insert(
    'recall',
    sql`SELECT i, c + (k % 7) * interval '1 hour' AS at, NULL::jsonb AS b, NULL::jsonb AS a, NULL::vector AS v, '{"query": "bench"}'::jsonb AS meta
                             FROM generate_series(1, ${2 * N}) k, LATERAL (SELECT 1 + (k::bigint * 104729) % ${N} AS i) j, LATERAL (SELECT ${created_at} AS c) x`,
  );
  await insert(
    'link',
    sql`SELECT i, c AS at, NULL::jsonb AS b, NULL::jsonb AS a, NULL::vector AS v,
                             jsonb_build_object('target_id', 'urn:uuid:' || md5('m' || (i - 1))::uuid, 'relation', 'similar', 'weight', 0.85) AS meta
                           FROM generate_series(2, ${N}, 3) i, LATERAL (SELECT ${created_at} AS c) x`,
  );
  await rebuildReplayIntervals(db, tenantId); // the events above bypassed recordMemoryEvents
  await db.execute(sql`VACUUM ANALYZE memory_events`);
  await db.execute(sql`VACUUM ANALYZE memory_states, edge_states`);
  const [{ n }] = await rows<{ n: number }>(db, sql`SELECT count(*)::int AS n FROM memory_events WHERE tenant_id = ${tenantId}`);
  console.log(
    `loaded ${N} memories, ${n} events in ${(ms(t0) / 1000).toFixed(1)} s; load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}\n`,
  );

  const iso = (d: Date) => d.toISOString();
  const mid = new Date(base.getTime() + 10 * 86_400_000);
  const client = new pg.Client({ connectionString: benchUrl.toString() });
  await client.connect();
  const pid = Number((await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
  if (args['recall-only']) {
    await recallBench(db, request, key, tenantId, now, mid, client, pid);
    await client.end();
    await node.close();
    closed = true;
    process.exit(0);
  }
  for (const [label, at] of [
    ['now', now],
    ['10 days in', mid],
  ] as const) {
    const first = await snapshotPage(db, tenantId, at, 500, 0);
    console.log(`snapshot at ${label}: ${first.total} memories, ${first.totalEdges} edges`);
    await statementTimed(`snapshot SQL at ${label}, limit 500 offset 0`, client, pid, snapshotQuery(tenantId, at, 500, 0));
    const middle = Math.floor(first.total / 2);
    await statementTimed(`snapshot SQL at ${label}, limit 500 offset ${middle}`, client, pid, snapshotQuery(tenantId, at, 500, middle));
    await timed(`GET /v1/replay/snapshot at ${label}, limit 500`, () => request(`/v1/replay/snapshot?at=${iso(at)}&limit=500`, key));
    await timed(`GET /v1/replay/snapshot at ${label}, limit 5000`, () => request(`/v1/replay/snapshot?at=${iso(at)}&limit=5000`, key));
  }
  if (args.explain) {
    const plan = await db.transaction(async (tx) => {
      await snapshotSettings(tx);
      return rows<{ 'QUERY PLAN': string }>(tx, sql`EXPLAIN (ANALYZE, BUFFERS) ${snapshotQuery(tenantId, now, 500, 0)}`);
    });
    console.log(plan.map((p) => p['QUERY PLAN']).join('\n'));
  }
  await recallBench(db, request, key, tenantId, now, mid, client, pid);
  await client.end();
  await timed('GET /v1/replay/timeline (limit 100)', () => request('/v1/replay/timeline', key));
  await timed('GET /v1/replay/timeline?operations=delete&agent_id=agent-1', () => request('/v1/replay/timeline?operations=delete&agent_id=agent-1', key));
  const hourAgo = new Date(now.getTime() - 3_600_000);
  await timed('GET /v1/replay/diff over the last hour', () => request(`/v1/replay/diff?from=${iso(hourAgo)}&to=${iso(now)}`, key));
  await timed('GET /v1/replay/diff over day 10 to 11', () => request(`/v1/replay/diff?from=${iso(mid)}&to=${iso(new Date(mid.getTime() + 86_400_000))}`, key));
  await timed('GET /v1/replay/memory/{id}', () => request(`/v1/replay/memory/urn:uuid:${uuidOf(N / 2)}`, key));
  console.log(
    `\nRSS ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB; load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  await node.close();
  closed = true;
} catch (err) {
  console.error(err);
  process.exitCode = 1;
} finally {
  if (!closed) await database.close().catch(() => {});
  if (!args.keep) await admin(`DROP DATABASE IF EXISTS ${DB}`);
}

/**
 * Counterfactual recall through the route (first call fills state_vectors, then warm), beside the
 * statement it replaced (a cosine over every past state read from the event log), run in the same
 * process on the same data; the two must return the same memories with the same similarities.
 */
async function recallBench(
  db: Db,
  request: (path: string, key: string) => Promise<any>,
  key: string,
  tenantId: string,
  now: Date,
  mid: Date,
  client: pg.Client,
  pid: number,
) {
  const iso = (d: Date) => d.toISOString();
  // The stored vectors are random, so any query is artificial; a sentence gives the hash embedder a
  // vector with a few dozen non-zero components (one word gives two, and a degenerate ranking).
  const q = 'what did the team decide about the invoice server deploy on tuesday';
  const vector = vectorLiteral((await embedAll(hashEmbedder(), [q]))[0]);
  for (const at of [now, mid]) {
    const t0 = performance.now();
    await request(`/v1/replay/recall?q=${encodeURIComponent(q)}&at=${iso(at)}`, key);
    console.log(`GET /v1/replay/recall at ${iso(at)}, first call (fills state_vectors): ${ms(t0).toFixed(0)} ms`);
  }
  for (const [label, at] of [
    ['now', now],
    ['10 days in', mid],
  ] as const) {
    for (const limit of [5, 100]) {
      const path = `/v1/replay/recall?q=${encodeURIComponent(q)}&at=${iso(at)}&limit=${limit}`;
      await timed(`GET /v1/replay/recall at ${label}, limit ${limit}`, () => request(path, key));
      await cpuTimed(`  its preselect statement at ${label}, limit ${limit}`, client, pid, recallCandidates(tenantId, at, vector, limit));
      await cpuTimed(`  before: the full-scan statement at ${label}, limit ${limit}`, client, pid, fullScanRecall(tenantId, at, vector, limit));
      const fast = (await request(path, key)).memories.map((m: any) => `${m.uuid} ${m.similarity}`);
      const slow = (
        await analyticTx(db, (tx) => rows<{ memory_id: string; similarity: number | string }>(tx, fullScanRecall(tenantId, at, vector, limit)))
      ).map((h) => `urn:uuid:${h.memory_id} ${Math.round(Math.min(1, Math.max(0, Number(h.similarity))) * 1e6) / 1e6}`);
      console.log(`  same answer as the full scan: ${JSON.stringify(fast) === JSON.stringify(slow) ? 'yes' : 'NO'} (${fast.length} memories)`);
      if (JSON.stringify(fast) !== JSON.stringify(slow)) process.exitCode = 1;
    }
  }
}

function analyticTx<T>(db: Db, fn: (tx: DbOrTx) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    await analyticSettings(tx);
    return fn(tx);
  });
}

/** A statement in recall's settings on its own connection: wall time and its backend's CPU time (see statementTimed). */
function cpuTimed(label: string, client: pg.Client, pid: number, statement: SQL) {
  return statementTimed(label, client, pid, statement, 'SET LOCAL enable_mergejoin = off');
}

/** The recall statement before state_vectors (kept here as the comparison). */
function fullScanRecall(tenantId: string, at: Date, vector: string, limit: number): SQL {
  return sql`SELECT l.memory_id::text AS memory_id, 1 - (${embeddingOfState('e')} <=> ${vector}::vector) AS similarity
        FROM (${latestStateEvents(tenantId, at)}) l JOIN memory_events e ON e.id = l.id
        WHERE ${presentAt(at, 'e')}
        ORDER BY similarity DESC NULLS LAST, l.memory_id LIMIT ${limit}`;
}

function uuidOf(i: number) {
  // md5('m' || i)::uuid, computed the same way in JS.
  const h = createHash('md5').update(`m${i}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
