import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { integration } from './harness';
import { freePort, type ServerProcess, startServer as startProcess, stopServer } from './server-process';

/**
 * The Node server when Postgres drops its connections or goes away: it keeps running, answers 503
 * SERVICE_UNAVAILABLE (never hangs, never 500) while the database is gone, says so in /health, and
 * recovers by itself. Needs a real Postgres: runs in the integration suite only.
 */
const root = new URL('..', import.meta.url).pathname;
const run = promisify(execFile);
const ADMIN = 'outage-admin-token-0123456789';
const SKIP_REASON = 'needs TEST_DATABASE_URL (npm run test:integration)';
if (!integration.databaseUrl) console.info(`postgres-outage.test.ts skipped: ${SKIP_REASON}`);

type Server = ServerProcess;

const running: Server[] = [];

async function startServer(databaseUrl: string): Promise<Server> {
  const server = await startProcess({ DATABASE_URL: databaseUrl, REDIS_URL: '', ADMIN_TOKEN: ADMIN, EMBEDDING_PROVIDER: 'hash', LOG_LEVEL: 'info' });
  running.push(server);
  return server;
}

afterAll(async () => {
  for (const s of running) await stopServer(s);
});

async function newKey(base: string): Promise<string> {
  const res = await fetch(`${base}/admin/v1/tenants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ email: `outage-${crypto.randomUUID().slice(0, 8)}@example.com`, tier: 'enterprise' }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { api_key: string }).api_key;
}

interface Outcome {
  status: number; // 0: no answer (connection refused, reset, or our 10 s timeout)
  ms: number;
  code?: string;
}

/** Sequential mixed traffic from `workers` clients until `stop()`; every outcome is kept. */
function load(base: string, key: string, workers = 4) {
  const outcomes: Outcome[] = [];
  let stopped = false;
  const one = async (i: number) => {
    const started = Date.now();
    const write = i % 2 === 0;
    try {
      const res = await fetch(`${base}${write ? '/v1/memories' : '/v1/usage'}`, {
        method: write ? 'POST' : 'GET',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: write ? JSON.stringify({ observation: `outage load ${i} ${Math.random()}` }) : undefined,
        signal: AbortSignal.timeout(10_000),
      });
      const body = (await res.json().catch(() => ({}))) as { code?: string };
      outcomes.push({ status: res.status, ms: Date.now() - started, code: body.code });
    } catch {
      outcomes.push({ status: 0, ms: Date.now() - started });
    }
  };
  const loops = Array.from({ length: workers }, async (_, w) => {
    for (let i = w; !stopped; i += workers) await one(i);
  });
  return {
    outcomes,
    async stop() {
      stopped = true;
      await Promise.all(loops);
      return outcomes;
    },
  };
}

const tally = (label: string, outcomes: Outcome[]) => {
  const counts: Record<number, number> = {};
  for (const o of outcomes) counts[o.status] = (counts[o.status] ?? 0) + 1;
  const slowest = outcomes.reduce((m, o) => Math.max(m, o.ms), 0);
  console.info(`${label}: ${outcomes.length} requests, by status ${JSON.stringify(counts)}, slowest ${slowest} ms`);
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(check: () => Promise<boolean>, ms: number) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return true;
    await sleep(250);
  }
  return false;
}

describe.skipIf(!integration.databaseUrl)(`Postgres drops connections or goes away (${SKIP_REASON})`, () => {
  it('pg_terminate_backend on every server connection, twice under load: the server keeps serving', async () => {
    const app = `engram-outage-${crypto.randomUUID().slice(0, 8)}`;
    const url = new URL(integration.databaseUrl!);
    url.searchParams.set('application_name', app);
    const server = await startServer(url.toString());
    const key = await newKey(server.base);
    const admin = new pg.Client({ connectionString: integration.databaseUrl });
    await admin.connect();
    try {
      const traffic = load(server.base, key);
      for (let round = 0; round < 2; round++) {
        await sleep(1000);
        const { rowCount } = await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [app]);
        expect(rowCount).toBeGreaterThan(0);
      }
      await sleep(1000);
      const outcomes = await traffic.stop();
      tally('terminate backends', outcomes);
      expect(server.proc.exitCode).toBeNull();
      // A request on a connection that was cut answers 503; nothing is a 500 or goes unanswered.
      expect(outcomes.filter((o) => ![200, 201, 503].includes(o.status))).toEqual([]);
      expect(outcomes.filter((o) => o.status === 503).every((o) => o.code === 'SERVICE_UNAVAILABLE')).toBe(true);
      expect((await fetch(`${server.base}/v1/usage`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
      expect(server.output()).toContain('database connection lost');
    } finally {
      await admin.end();
    }
  }, 90_000);

  const pgBin = '/usr/lib/postgresql/15/bin/pg_ctl';
  it.skipIf(!existsSync(pgBin))(
    'a private Postgres stopped mid-load: 503 fast and unhealthy while away, recovery by itself',
    async () => {
      // Our own Postgres (and Redis, which the script also manages) on free ports, so stopping it touches no one else.
      const env = {
        ...process.env,
        ENGRAM_CI_DIR: `/tmp/engram-outage-${crypto.randomUUID().slice(0, 8)}`,
        ENGRAM_CI_PG_PORT: String(await freePort()),
        ENGRAM_CI_REDIS_PORT: String(await freePort()),
      };
      const services = (cmd: string) => run('bash', ['.ci/services.sh', cmd], { cwd: root, env, timeout: 120_000 });
      try {
        const { stdout } = await services('start');
        const databaseUrl = /DATABASE_URL=(\S+)/.exec(stdout)![1];
        const server = await startServer(databaseUrl);
        const key = await newKey(server.base);
        const traffic = load(server.base, key);
        await sleep(1500);
        await services('stop');
        const downAt = traffic.outcomes.length;
        await sleep(3000);

        // While it is away: answers come quickly and say 503; /health says unhealthy.
        const health = await fetch(`${server.base}/health`, { signal: AbortSignal.timeout(10_000) });
        expect(health.status).toBe(503);
        expect(await health.json()).toMatchObject({ status: 'unhealthy' });
        const during = traffic.outcomes.slice(downAt);
        tally('while Postgres is stopped', during);
        expect(during.length).toBeGreaterThan(0);
        expect(during.filter((o) => o.status !== 503)).toEqual([]);
        expect(Math.max(...during.map((o) => o.ms))).toBeLessThan(6000);

        await services('start');
        expect(await waitFor(async () => (await fetch(`${server.base}/health`)).status === 200, 20_000)).toBe(true);
        const after = traffic.outcomes.length;
        await sleep(1500);
        const outcomes = await traffic.stop();
        tally('restart, whole run', outcomes);
        tally('after recovery', outcomes.slice(after));
        expect(server.proc.exitCode).toBeNull();
        expect(outcomes.slice(after).filter((o) => o.status !== 200 && o.status !== 201)).toEqual([]);
        expect(outcomes.filter((o) => ![200, 201, 503].includes(o.status))).toEqual([]);
      } finally {
        await services('stop').catch(() => undefined);
        await rm(env.ENGRAM_CI_DIR, { recursive: true, force: true });
      }
    },
    180_000,
  );
});
