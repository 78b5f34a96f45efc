/**
 * Every `bench*` script of package.json, and every other benchmark in test/bench/, once at its smallest size, so a benchmark that no longer
 * starts (a dependency gone, an API renamed) fails CI instead of the next person who measures.
 * The figures mean nothing at this size; each bench must only run to its end and print its table.
 *
 *   npm run bench:smoke [-- name ...]     (TEST_DATABASE_URL / TEST_REDIS_URL, or DATABASE_URL / REDIS_URL)
 *
 * Each runs as `tsx test/bench/<file>.ts <its smoke flags>` with BENCH_SMOKE=1 (which shrinks what
 * has no flag: warm-ups, fixed-size steps), in a process group killed after its time limit.
 * Embedded benches run without any database URL in their environment; a Postgres bench gets a
 * fresh database of its own on that server, dropped afterwards, and the Redis URL. Without a
 * Postgres server the Postgres benches are skipped with their reason; LoCoMo-based benches get a
 * tiny conversation set written here (the real one is not in the repository).
 * A script or file with no entry below fails the run, so a new benchmark comes with its smoke size.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

interface Smoke {
  args: string[];
  /** `postgres`: a fresh database on DATABASE_URL's server, and REDIS_URL. Default: embedded. */
  storage?: 'postgres';
  /** Writes a small LoCoMo-shaped set and passes `--data <dir>`. */
  locomo?: boolean;
  /** Migrates the fresh database first (a bench that expects a migrated one). */
  migrate?: boolean;
  /** Seconds before its process group is killed (default 120). */
  limit?: number;
}

const SMOKE: Record<string, Smoke> = {
  bench: { args: ['--duration', '1', '--rounds', '1', '--profile'] },
  'bench:webhooks': { args: ['--latency', '5', '--backlog', '20'] },
  'bench:events': { args: ['--writes', '5', '--poll', '200'] },
  'bench:traces': { args: ['--appends', '5', '--completions', '1'] },
  'bench:actions': { args: ['--n', '5'] },
  'bench:knowledge': { args: ['--triples', '200', '--entities', '50', '--runs', '3'] },
  'bench:runtime': { args: ['--transitions', '3', '--checkpoints', '3', '--memories', '10', '--runs', '1'] },
  'bench:policies': { args: ['--iterations', '5'] },
  'bench:policy-isolation': { args: ['--submitters', '1', '--requests', '5'] },
  'bench:eval': { args: ['--sizes', '200', '--runs', '1'], storage: 'postgres' },
  'bench:peers': { args: ['--conversations', '26', '--stores', '10', '--queries', '5', '--throughput', '20'], storage: 'postgres', locomo: true },
  'bench:audit': { args: ['--entries', '1000', '--runs', '1'] },
  'bench:workers': { args: ['--stores', '3', '--searches', '3', '--latency', '0'], storage: 'postgres', limit: 180 },
  'bench:embedded': { args: ['--stores', '20', '--searches', '5'], locomo: true },
  'bench:mcp': { args: ['--memories', '10', '--calls', '5'] },
  'bench:sdk': { args: ['--memories', '10', '--calls', '5', '--install-size', 'no'] },
  'bench:erasure': { args: ['--memories', '100'] },
  'bench:bundle': { args: ['--memories', '100'] },
  'bench:console': { args: ['--n', '5', '--pending', '5'] },
  'bench:scale': { args: ['--sizes', '200', '--tenants', '3', '--searches', '3', '--maintenance-work-mem', '64MB'], storage: 'postgres', limit: 180 },
  'bench:disk': { args: ['--stores', '20', '--clients', '2'], storage: 'postgres' },
  'bench:cluster': {
    args: ['--seconds', '3', '--single-seconds', '2', '--instances', '2', '--clients', '4', '--tenants', '2'],
    storage: 'postgres',
    limit: 180,
  },
};

/** Benchmarks with no script of their own (docs/performance.md gives their commands). */
const SMOKE_FILES: Record<string, Smoke> = {
  'test/bench/durability.ts': { args: ['--stores', '5', '--dir', tmpdir()] },
  'test/bench/search.ts': { args: ['--sizes', '200', '--search-embedder', 'hash'] },
  'test/bench/rerank.ts': { args: ['--memories', '100', '--searches', '5'] },
  'test/bench/locomo.ts': { args: ['--providers', 'hash', '--conversations', '26'], locomo: true },
  'test/bench/locomo-levers.ts': { args: ['--cache', join(tmpdir(), `engram-smoke-levers-${process.pid}.json`)], locomo: true },
  'test/bench/replay.ts': { args: ['--memories', '200', '--runs', '1'], storage: 'postgres' },
  'test/bench/changecontrol.ts': {
    args: ['--memories', '200', '--events', '1000', '--changed', '20', '--audit', '2000', '--audit-first', '1000', '--calls', '1'],
    storage: 'postgres',
    migrate: true,
  },
  'test/bench/scale-export.ts': { args: ['--memories', '200', '--runs', '1'], storage: 'postgres' },
  'test/bench/round-trips.ts': { args: ['--calls', '5', '--rounds', '1'], storage: 'postgres' },
  'test/bench/keyword-stages.ts': { args: ['--load', '300', '--searches', '3', '--min-postings', '1'], storage: 'postgres' },
};
/** The files of test/bench/ that are parts of a benchmark, not one. */
const PARTS = [
  'autocannon.d.ts',
  'cpu-phases.ts',
  'http-instance.ts',
  'latency-proxy.ts',
  'lib.ts',
  'scale-lib.ts',
  'scale-throughput.ts',
  'smoke.ts',
  'statement-replay.ts',
  'statement-replay-clients.ts',
];

const root = new URL('../../', import.meta.url).pathname;
const scripts: Record<string, string> = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')).scripts;
const benches = Object.entries(scripts).filter(([name]) => /^bench(:|$)/.test(name) && name !== 'bench:smoke');
const scripted = new Set(benches.map(([, command]) => /tsx (test\/bench\/\S+\.ts)/.exec(command)?.[1]));
const files = (await readdir(join(root, 'test/bench'))).map((f) => `test/bench/${f}`);
const unlisted = [
  ...benches.filter(([name]) => !SMOKE[name]).map(([name]) => name),
  ...files.filter((f) => !scripted.has(f) && !SMOKE_FILES[f] && !PARTS.includes(f.slice('test/bench/'.length))),
];
const gone = Object.keys(SMOKE).filter((name) => !scripts[name]);
if (unlisted.length || gone.length) {
  if (unlisted.length) console.error(`no smoke size in test/bench/smoke.ts (SMOKE, SMOKE_FILES or PARTS) for: ${unlisted.join(', ')}`);
  if (gone.length) console.error(`smoke sizes for scripts package.json no longer has: ${gone.join(', ')}`);
  process.exit(1);
}
const wanted = process.argv.slice(2);
const everything: [string, string, Smoke][] = [
  ...benches.map(([name, command]): [string, string, Smoke] => [name, command, SMOKE[name]]),
  ...Object.entries(SMOKE_FILES).map(([file, smoke]): [string, string, Smoke] => [file, `tsx ${file}`, smoke]),
];
const chosen = everything.filter(([name]) => !wanted.length || wanted.includes(name));

const postgresUrl = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL;
const redisUrl = process.env.TEST_REDIS_URL ?? process.env.REDIS_URL;
for (const url of [postgresUrl, redisUrl]) {
  if (url && !['127.0.0.1', 'localhost', '[::1]'].includes(new URL(url).hostname)) throw new Error(`benches talk only to this machine: ${new URL(url).host}`);
}
const DB_URL_VARS = ['DATABASE_URL', 'REDIS_URL', 'TEST_DATABASE_URL', 'TEST_REDIS_URL'];

/** A few LoCoMo-shaped conversations (26, 30, 41): sessions of turns and category 1-4 questions. */
async function writeLocomo(dir: string) {
  const topics = ['the trip to Lisbon', 'a new job offer', 'the garden', 'a marathon', 'the book club', 'a broken laptop'];
  for (const conv of ['26', '30', '41']) {
    const turn = (i: number) => ({
      speaker: i % 2 ? 'Bo' : 'Ana',
      dia_id: `D1:${i + 1}`,
      text: `Conversation ${conv}, turn ${i}: about ${topics[i % topics.length]}.`,
    });
    const body = {
      session_1: Array.from({ length: 20 }, (_, i) => turn(i)),
      session_2: Array.from({ length: 20 }, (_, i) => turn(i + 20)),
      qa: topics.map((t, i) => ({ question: `What did they say about ${t}?`, answer: t, evidence: [`D1:${i + 1}`], category: (i % 4) + 1 })),
    };
    await writeFile(join(dir, `${conv}.json`), JSON.stringify(body));
  }
}

/** A fresh database on the Postgres server for one bench; its URL and how to drop it. */
async function freshDatabase(name: string) {
  const db = `engram_smoke_${name.replace(/\W/g, '_')}`;
  const admin = new URL(postgresUrl!);
  admin.pathname = '/postgres';
  const run = async (sql: string) => {
    const client = new pg.Client({ connectionString: admin.toString() });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await run(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
  await run(`CREATE DATABASE ${db}`);
  const url = new URL(postgresUrl!);
  url.pathname = `/${db}`;
  return { url: url.toString(), drop: () => run(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`) };
}

function run(file: string, args: string[], env: NodeJS.ProcessEnv, limitSeconds: number): Promise<{ code: number | null; timedOut: boolean }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file, ...args], { cwd: root, env, stdio: 'inherit', detached: true });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      process.kill(-child.pid!, 'SIGKILL');
    }, limitSeconds * 1000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      // Whatever it left behind (a server child, a worker) goes with its group.
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* the group is gone already */
      }
      resolve({ code, timedOut });
    });
  });
}

const locomoDir = await mkdtemp(join(tmpdir(), 'engram-bench-smoke-'));
await writeLocomo(locomoDir);
const results: string[] = [];
let failed = 0;
try {
  for (const [name, command, smoke] of chosen) {
    const file = /tsx (test\/bench\/\S+\.ts)/.exec(command)?.[1];
    if (!file) throw new Error(`${name}: "${command}" does not run a test/bench/*.ts file with tsx`);
    if (smoke.storage === 'postgres' && !postgresUrl) {
      results.push(`SKIP ${name}: needs PostgreSQL (set TEST_DATABASE_URL or DATABASE_URL)`);
      continue;
    }
    console.log(`\n=== ${name}: ${file} ${smoke.args.join(' ')}`);
    const env: NodeJS.ProcessEnv = { ...process.env, BENCH_SMOKE: '1' };
    for (const v of DB_URL_VARS) delete env[v];
    const database = smoke.storage === 'postgres' ? await freshDatabase(name) : null;
    if (database) Object.assign(env, { DATABASE_URL: database.url }, redisUrl ? { REDIS_URL: redisUrl } : {});
    if (database && smoke.migrate && (await run('functions/node.ts', ['migrate'], env, 120)).code !== 0) throw new Error(`${name}: migrate failed`);
    const args = smoke.locomo ? [...smoke.args, '--data', locomoDir] : smoke.args;
    const started = performance.now();
    const { code, timedOut } = await run(file, args, env, smoke.limit ?? 120);
    const seconds = ((performance.now() - started) / 1000).toFixed(0);
    await database?.drop();
    const ok = code === 0 && !timedOut;
    if (!ok) failed++;
    results.push(`${ok ? 'ok  ' : 'FAIL'} ${name} (${seconds} s)${timedOut ? ': did not stop within its limit' : code ? `: exit ${code}` : ''}`);
  }
} finally {
  await rm(locomoDir, { recursive: true, force: true });
}
console.log(`\n=== bench smoke\n${results.join('\n')}`);
process.exit(failed ? 1 : 0);
