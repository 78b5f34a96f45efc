/** Small helpers the benchmark scripts share. */
import { readdir, readFile } from 'node:fs/promises';
import { buildApp } from '../../functions/app';
import { jobHandlers, maintenanceTasks } from '../../functions/registry';
import { createNodeServices } from '../../shared/node/services';
import type { Embedder } from '../../shared/memory/embeddings';
import { parseConfig } from '../../shared/platform/contract/config';
import { createLogger } from '../../shared/platform/data/log';

/** BENCH_SMOKE=1 (test/bench/smoke.ts): the smallest run that still prints every table; its figures mean nothing. */
export const SMOKE = process.env.BENCH_SMOKE === '1';

/** Deterministic numbers in [0, 1) (mulberry32), so every run loads the same data. */
export function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Nearest-rank percentile. */
export const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.max(0, Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1))];
};
export const f0 = (x: number) => x.toFixed(0);
export const f1 = (x: number) => x.toFixed(1);
export const f2 = (x: number) => x.toFixed(2);

/** A markdown table. */
export function table(header: string[], body: string[][]) {
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...body.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

export async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const out = await fn();
  return [out, performance.now() - t0];
}

/** Runs `fn` over `items` with `n` at a time. */
export async function pool<T>(items: T[], n: number, fn: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) await fn(items[next++]);
    }),
  );
}

/** A migration as `runtime` runs it: `IF version() LIKE '%wasm32%' THEN <embedded> ELSE <PostgreSQL> END IF;` (migrations/0056) keeps one branch. */
const asRunOn = (text: string, runtime: 'postgres' | 'embedded') =>
  text.replace(/IF version\(\) LIKE '%wasm32%' THEN([\s\S]*?)\bELSE\b([\s\S]*?)\bEND IF;/g, (_, embedded: string, postgres: string) =>
    runtime === 'embedded' ? embedded : postgres,
  );

/** An index exactly as the migrations define it on `runtime` (the last CREATE INDEX of that name wins). */
export async function indexDefinition(index: string, runtime: 'postgres' | 'embedded' = 'postgres') {
  const dir = new URL('../../migrations/', import.meta.url);
  const files = (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
  const found = (await Promise.all(files.map((f) => readFile(new URL(f, dir), 'utf8')))).flatMap(
    (text) => asRunOn(text, runtime).match(new RegExp(`CREATE INDEX ${index} [^;]*;`, 'g')) ?? [],
  );
  if (!found.length) throw new Error(`${index} not found in migrations/`);
  return found[found.length - 1];
}

export const BENCH_ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';

/**
 * The engram app in this process, wired as functions/node.ts wires it (job handlers, maintenance),
 * on embedded PGlite or on DATABASE_URL (and REDIS_URL), with rate limits raised out of the way.
 * `call` goes through app.request (no sockets) and throws on any status ≥ 300.
 */
export async function inProcessEngram(env: Record<string, string> = {}, opts: { embedder?: Embedder } = {}) {
  const config = parseConfig({
    DATA_DIR: 'memory://',
    DATABASE_URL: process.env.DATABASE_URL,
    REDIS_URL: process.env.REDIS_URL,
    ADMIN_TOKEN: BENCH_ADMIN_TOKEN,
    EMBEDDING_PROVIDER: 'hash',
    LOG_LEVEL: 'silent',
    RATE_LIMIT_SCALE: '1000',
    ...env,
  });
  const log = createLogger('silent');
  const node = await createNodeServices(config, { log, jobHandlers: jobHandlers(config, log), maintenance: maintenanceTasks, embedder: opts.embedder });
  const app = buildApp(() => node.services);
  const call = async (method: string, path: string, key: string, body?: unknown) => {
    const res = await app.request(path, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.json()) as any;
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  const newTenant = async (tier = 'enterprise') =>
    (await call('POST', '/admin/v1/tenants', BENCH_ADMIN_TOKEN, { email: `bench-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`, tier })) as {
      tenant_id: string;
      api_key: string;
    };
  return { config, node, app, call, newTenant };
}

/**
 * CPU time (ms) spent so far by the PostgreSQL server of `databaseUrl`: its postmaster and every
 * process it started (backends, WAL writer, checkpointer, autovacuum), from /proc. Null when the
 * server is not on this machine, not Linux, or its data directory cannot be read (needs superuser).
 */
export async function postgresCpu(databaseUrl: string): Promise<(() => Promise<number>) | null> {
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: databaseUrl });
  try {
    await c.connect();
    const dir = (await c.query<{ data_directory: string }>('SHOW data_directory')).rows[0].data_directory;
    const postmaster = (await readFile(`${dir}/postmaster.pid`, 'utf8')).split('\n')[0].trim();
    const ticks = 10; // ms per clock tick (USER_HZ 100 on Linux)
    return async () => {
      let ms = 0;
      for (const pid of await readdir('/proc')) {
        if (!/^\d+$/.test(pid)) continue;
        const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // state, ppid, ... utime is field 14, stime 15
        if (pid === postmaster || fields[1] === postmaster) ms += (Number(fields[11]) + Number(fields[12])) * ticks;
      }
      return ms;
    };
  } catch {
    return null;
  } finally {
    await c.end().catch(() => undefined);
  }
}

/** This process's CPU time (user + system) so far, ms. */
export const processCpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
