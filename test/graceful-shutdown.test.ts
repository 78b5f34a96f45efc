import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { integration } from './harness';
import { freePort, type ServerProcess, startServer, stopServer } from './server-process';

/**
 * SIGTERM on Node: the server stops accepting at once, answers every request in flight, ends the
 * live event streams and exits 0 (docs/operations.md#shutdown). With Postgres + Redis, a rolling
 * restart of two instances under load fails and loses no request.
 */
const ADMIN = 'shutdown-admin-token-0123456789';
const running: ServerProcess[] = [];
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const s of running) await stopServer(s, 'SIGKILL');
  for (const c of cleanups) await c();
});

/** An OpenAI-compatible embeddings stand-in that answers after `delayMs`: stores stay in flight that long. */
async function slowEmbedder(delayMs: number): Promise<{ url: string; inputs: () => number }> {
  let inputs = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const input = JSON.parse(Buffer.concat(chunks).toString('utf8')).input as string | string[];
      inputs += Array.isArray(input) ? input.length : 1;
      const data = (Array.isArray(input) ? input : [input]).map((_, index) => ({
        object: 'embedding',
        index,
        embedding: Array.from({ length: 512 }, (_, i) => Math.sin(i + index + 1)),
      }));
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data })), delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, inputs: () => inputs };
}

async function tenantKey(base: string): Promise<string> {
  const res = await fetch(`${base}/admin/v1/tenants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ email: `shutdown-${crypto.randomUUID().slice(0, 8)}@example.com`, tier: 'enterprise' }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { api_key: string }).api_key;
}

const store = (base: string, key: string, observation: string, idempotencyKey = crypto.randomUUID()) =>
  fetch(`${base}/v1/memories`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
    body: JSON.stringify({ observation }),
  });

const memoryCount = async (base: string, key: string) =>
  ((await (await fetch(`${base}/v1/memories?limit=1`, { headers: { authorization: `Bearer ${key}` } })).json()) as { total: number }).total;

/**
 * `npm start` as a process manager runs it: in a process group of its own (npm, its shell and the
 * server), which gets the signal as a whole. Resolves once `/healthz` answers; `ended` resolves
 * when every process of the group has let go of the output (all of them exited).
 */
async function npmStart(env: Record<string, string>) {
  const port = await freePort();
  let out = '';
  const proc = spawn('npm', ['start'], {
    cwd: new URL('..', import.meta.url).pathname,
    env: { ...process.env, PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const ended = Promise.all([new Promise((r) => proc.stdout!.once('close', r)), new Promise((r) => proc.stderr!.once('close', r))]);
  const signal = (name: NodeJS.Signals) => process.kill(-proc.pid!, name);
  groups.push(signal);
  const base = `http://127.0.0.1:${port}`;
  for (const deadline = Date.now() + 90_000; ; ) {
    if (proc.exitCode !== null) throw new Error(`npm start exited ${proc.exitCode}: ${out}`);
    if (Date.now() > deadline) throw new Error(`npm start did not answer: ${out}`);
    if (
      await fetch(`${base}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    await new Promise((r) => setTimeout(r, 200));
  }
  return { base, port, signal, ended, output: () => out };
}
const groups: ((name: NodeJS.Signals) => void)[] = [];
afterAll(() => {
  for (const signal of groups)
    try {
      signal('SIGKILL');
    } catch {
      // the group has exited
    }
});

describe('graceful shutdown on SIGTERM', () => {
  it('answers the requests in flight, ends event streams, refuses new connections and exits 0; nothing is lost', async () => {
    const embedder = await slowEmbedder(800);
    const dataDir = integration.databaseUrl ? null : await mkdtemp(join(tmpdir(), 'engram-shutdown-'));
    if (dataDir) cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const storage: Record<string, string> = dataDir ? { DATA_DIR: dataDir } : { DATABASE_URL: integration.databaseUrl!, REDIS_URL: integration.redisUrl ?? '' };
    const env = {
      ...storage,
      ADMIN_TOKEN: ADMIN,
      EMBEDDING_PROVIDER: 'openai',
      EMBEDDING_BASE_URL: embedder.url,
      EMBEDDING_API_KEY: 'test',
      EMBEDDING_MODEL: 'slow',
      LOG_LEVEL: 'info',
      SHUTDOWN_GRACE_MS: '10000',
    };
    const server = await startServer(env, { timeoutMs: 90_000 });
    running.push(server);
    const key = await tenantKey(server.base);

    const stream = await fetch(`${server.base}/v1/events/stream`, { headers: { authorization: `Bearer ${key}` } });
    expect(stream.status).toBe(200);
    const streamEnded = stream.body!.pipeTo(new WritableStream()).then(
      () => 'ended',
      () => 'ended',
    );

    const stores = Array.from({ length: 8 }, (_, i) => store(server.base, key, `In flight at shutdown number ${i}`));
    // Every store is in the server's hands (being embedded) before the signal.
    while (embedder.inputs() < 8) await new Promise((r) => setTimeout(r, 10));
    const exited = new Promise<number | null>((resolve) => server.proc.once('exit', (code) => resolve(code)));
    server.proc.kill('SIGTERM');

    const answers = await Promise.all(stores).catch((err) => {
      throw new Error(`a store failed (${err.cause?.code ?? err}); the server said: ${server.output().slice(-3000)}`);
    });
    expect(answers.map((r) => r.status)).toEqual(Array(8).fill(201));
    expect(await streamEnded).toBe('ended');
    expect(await exited).toBe(0);
    expect(server.output()).toMatch(/"stopped".*"forced":false/);
    await expect(fetch(`${server.base}/healthz`)).rejects.toThrow();

    // Started again on the same storage, every acknowledged store is there.
    const again = await startServer({ ...env, PORT: String(server.port) }, { timeoutMs: 90_000 });
    running.push(again);
    expect(await memoryCount(again.base, key)).toBe(8);
    await stopServer(again);
  }, 180_000);

  it('npm start under load: SIGTERM to its process group answers every write in flight, and every acknowledged one is stored', async () => {
    const dataDir = integration.databaseUrl ? null : await mkdtemp(join(tmpdir(), 'engram-npm-start-'));
    if (dataDir) cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const storage: Record<string, string> = dataDir ? { DATA_DIR: dataDir } : { DATABASE_URL: integration.databaseUrl!, REDIS_URL: integration.redisUrl ?? '' };
    const env = { ...storage, ADMIN_TOKEN: ADMIN, EMBEDDING_PROVIDER: 'hash', LOG_LEVEL: 'info', RATE_LIMIT_SCALE: '100', SHUTDOWN_GRACE_MS: '10000' };
    const server = await npmStart(env);
    const key = await tenantKey(server.base);

    let writing = true;
    let acknowledged = 0;
    const failures: string[] = [];
    const writer = async (n: number) => {
      for (let i = 0; writing; i++) {
        try {
          const res = await store(server.base, key, `Writer ${n} write ${i} under a stopping npm start`);
          if (res.status === 201) acknowledged += 1;
          else failures.push(`${res.status} ${await res.text()}`);
        } catch (err) {
          failures.push(String((err as { cause?: { code?: string } }).cause?.code ?? err));
        }
      }
    };
    const writers = Array.from({ length: 16 }, (_, n) => writer(n));
    while (acknowledged < 100) await new Promise((r) => setTimeout(r, 20));
    // No writer starts a request after this; the 16 in flight must each be answered.
    writing = false;
    server.signal('SIGTERM');
    await Promise.all(writers);
    await server.ended;
    expect(failures, server.output().slice(-3000)).toEqual([]);
    expect(server.output()).toMatch(/"stopped".*"forced":false/);

    const again = await startServer(env, { timeoutMs: 90_000 });
    running.push(again);
    expect(await memoryCount(again.base, key)).toBe(acknowledged);
    await stopServer(again);
  }, 180_000);

  it.skipIf(!integration.databaseUrl)(
    'a rolling restart of two instances under load fails and loses no request',
    async () => {
      const env = {
        DATABASE_URL: integration.databaseUrl!,
        REDIS_URL: integration.redisUrl ?? '',
        ADMIN_TOKEN: ADMIN,
        EMBEDDING_PROVIDER: 'hash',
        LOG_LEVEL: 'warn',
        RATE_LIMIT_SCALE: '100',
      };
      const start = async () => {
        const s = await startServer(env, { timeoutMs: 90_000 });
        running.push(s);
        return s;
      };
      const pool = [await start(), await start()];
      const key = await tenantKey(pool[0].base);

      // A balancer in the test: round robin over the live instances; a connection refused goes to the
      // next one (what a load balancer does with a backend that stopped), and a pooled keep-alive
      // connection the stopping server closed as the request went out is retried with the same
      // Idempotency-Key (what the SDK does), so a retry never stores twice.
      let turn = 0;
      let stored = 0;
      const failures: string[] = [];
      let loading = true;
      const client = async (n: number) => {
        for (let i = 0; loading; i++) {
          const idempotencyKey = crypto.randomUUID();
          for (let attempt = 0; ; attempt++) {
            const target = pool[turn++ % pool.length];
            try {
              const res = await store(target.base, key, `Rolling restart client ${n} write ${i}`, idempotencyKey);
              if (res.status === 201) stored += 1;
              else failures.push(`${res.status} ${await res.text()}`);
              break;
            } catch (err) {
              const code = (err as { cause?: { code?: string } }).cause?.code;
              if (!['ECONNREFUSED', 'ECONNRESET', 'UND_ERR_SOCKET'].includes(code ?? '') || attempt > 20) {
                failures.push(`${code ?? String(err)}`);
                break;
              }
            }
          }
        }
      };
      const clients = Array.from({ length: 6 }, (_, n) => client(n));

      for (const index of [0, 1]) {
        await new Promise((r) => setTimeout(r, 1_000));
        const old = pool[index];
        const replacement = await start(); // the new instance is up before the old one stops
        pool.push(replacement);
        await stopServer(old, 'SIGTERM');
        pool.splice(pool.indexOf(old), 1);
        expect(old.proc.exitCode).toBe(0);
      }
      await new Promise((r) => setTimeout(r, 1_000));
      loading = false;
      await Promise.all(clients);

      expect(failures).toEqual([]);
      expect(stored).toBeGreaterThan(20);
      expect(await memoryCount(pool[0].base, key)).toBe(stored);
    },
    180_000,
  );
});
