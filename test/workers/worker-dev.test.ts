import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createPublicKey } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type RequestFn, testClient } from '../client';
import { freePort } from '../server-process';
import { startReceiver, verifySignature } from '../standins/webhook-receiver';

/**
 * Runs in Node: `npm run worker:dev` (test/standins/worker-dev.ts) as a developer starts it, with
 * only the database and Redis of this suite and WEBHOOKS_ALLOW_INSECURE=1 in its environment, then
 * the families that need what production has beside the worker: a trace signing key and QStash.
 */
const ROOT = new URL('../..', import.meta.url).pathname;
const READY_TIMEOUT_MS = 90_000;
const REQUEST_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 5_000;
/** Generous: the stand-in publishes at once; this only bounds a broken run. */
const DELIVERY_WAIT_MS = 20_000;

const bindings = inject('workerBindings');

let child: ChildProcess | null = null;
let exited: Promise<void> = Promise.resolve();
let dataDir = '';
let output = '';
let base = '';
const adminToken = `admin-${crypto.randomUUID()}`;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

const append = (chunk: Buffer) => {
  output += chunk.toString();
  if (output.length > 20_000) output = output.slice(-20_000);
};
const call: RequestFn = (method, path, opts) =>
  testClient((req) => fetch(req, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) }), { base })(method, path, opts);

async function waitUntilReady() {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let gone = false;
  void exited.then(() => (gone = true));
  while (Date.now() < deadline) {
    if (gone) throw new Error(`worker:dev exited before it was ready (code ${child?.exitCode}):\n${output}`);
    try {
      const res = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(2_000) });
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`worker:dev did not answer GET /healthz within ${READY_TIMEOUT_MS} ms:\n${output}`);
}

beforeAll(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  dataDir = await mkdtemp(join(tmpdir(), 'engram-worker-dev-'));
  receiver = await startReceiver();
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DATABASE_URL: bindings.DATABASE_URL,
    REDIS_URL: process.env.TEST_REDIS_URL,
    PORT: String(port),
    INSPECTOR_PORT: String(await freePort()),
    DATA_DIR: dataDir,
    ADMIN_TOKEN: adminToken,
    // No model download here: the deterministic provider instead of the local embeddings server.
    EMBEDDING_PROVIDER: 'hash',
    WEBHOOKS_ALLOW_INSECURE: '1',
    LOG_LEVEL: 'warn',
    CI: 'true',
    NO_COLOR: '1',
  };
  // node --import tsx, not the tsx CLI: one process, whose SIGTERM handler stops wrangler's group.
  const args = ['--import', 'tsx', join(ROOT, 'test/standins/worker-dev.ts'), '--persist-to', join(dataDir, 'wrangler'), '--log-level', 'warn'];
  child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env });
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  exited = new Promise((resolve) => child!.once('exit', () => resolve()));
  await waitUntilReady();
}, READY_TIMEOUT_MS + 10_000);

afterAll(async () => {
  if (child?.pid && child.exitCode === null && child.signalCode === null) {
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 3 * STOP_TIMEOUT_MS))]);
  }
  await receiver?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
}, 4 * STOP_TIMEOUT_MS);

async function proTenant(label: string): Promise<string> {
  const res = await call('POST', '/admin/v1/tenants', {
    key: adminToken,
    body: { email: `${label}-${crypto.randomUUID().slice(0, 12)}@example.com`, tier: 'pro' },
  });
  expect(res.status, `${res.text}\n${output}`).toBe(201);
  return res.body.api_key as string;
}

describe('npm run worker:dev', () => {
  it('signs traces with a development key kept owner-only in DATA_DIR', async () => {
    const key = await proTenant('worker-dev-traces');
    const started = await call('POST', '/v1/traces', { key, body: { agent_id: 'worker-dev' } });
    expect(started.status, started.text).toBe(201);
    const id = started.body.trace_id as string;
    expect((await call('POST', `/v1/traces/${id}/steps`, { key, body: { type: 'ACTION', content: 'one step' } })).status).toBe(201);
    const done = await call('POST', `/v1/traces/${id}/complete`, { key });
    expect(done.status, `${done.text}\n${output}`).toBe(200);
    const publicKey = await call('GET', '/v1/traces/public-key', { key });
    expect(publicKey.status, publicKey.text).toBe(200);
    expect(publicKey.body.key_id).toBe(done.body.key_id);
    expect((await call('POST', `/v1/traces/${id}/verify`, { key })).body).toMatchObject({ valid: true, signature_valid: true });

    // The key the worker signs with is the one kept on disk, so the next start signs with it too.
    const file = join(dataDir, 'trace-signing-key.pem');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const kept = createPublicKey(await readFile(file, 'utf8'))
      .export({ type: 'spki', format: 'pem' })
      .toString();
    expect(publicKey.body.public_key.trim()).toBe(kept.trim());
  });

  it('delivers a webhook to an http:// receiver through the QStash stand-in, without the cron', async () => {
    const key = await proTenant('worker-dev-hook');
    const hook = await call('POST', '/v1/webhooks', { key, body: { url: receiver.url('/worker-dev'), events: ['memory.created'] } });
    expect(hook.status, `${hook.text}\n${output}`).toBe(201);
    const stored = await call('POST', '/v1/memories', { key, body: { observation: 'delivered from worker:dev' } });
    expect(stored.status, stored.text).toBe(201);
    await Promise.race([
      receiver.waitFor(1),
      new Promise((_, reject) => setTimeout(() => reject(new Error(`no delivery within ${DELIVERY_WAIT_MS} ms:\n${output}`)), DELIVERY_WAIT_MS)),
    ]);
    const [delivery] = receiver.received;
    expect(delivery.json).toMatchObject({ type: 'memory.created', data: { memory: { observation: 'delivered from worker:dev' } } });
    expect(verifySignature(hook.body.secret, delivery.headers, delivery.body)).toBe(true);
    let log = await call('GET', `/v1/webhooks/${hook.body.webhook_id}/deliveries`, { key });
    for (let i = 0; i < 50 && !log.body.deliveries.length; i++) {
      await new Promise((r) => setTimeout(r, 100));
      log = await call('GET', `/v1/webhooks/${hook.body.webhook_id}/deliveries`, { key });
    }
    expect(log.body.deliveries[0]).toMatchObject({ success: true, attempt: 1, status_code: 200 });
  }, 30_000);

  it('serves /mcp over HTTP from workerd: the official client remembers and recalls', async () => {
    const key = await proTenant('worker-dev-mcp');
    const client = new Client({ name: 'worker-dev', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('recall');
      const stored = (await client.callTool({ name: 'remember', arguments: { observation: 'The worker:dev agent likes green tea' } })) as {
        isError?: boolean;
        structuredContent?: { uuid?: string };
      };
      expect(stored.isError, JSON.stringify(stored)).toBeFalsy();
      const found = (await client.callTool({ name: 'recall', arguments: { q: 'green tea', mode: 'hybrid' } })) as {
        structuredContent?: { memories?: { uuid: string }[] };
      };
      expect(found.structuredContent?.memories?.map((m) => m.uuid)).toContain(stored.structuredContent?.uuid);
    } finally {
      await client.close();
    }
  }, 30_000);
});

const PG_BIN = '/usr/lib/postgresql/15/bin';
/** The private services can start here without installing or building anything (root, PostgreSQL 15 with pgvector, Redis). */
function ciServicesReady(): boolean {
  if (process.getuid?.() !== 0 || !existsSync(`${PG_BIN}/postgres`)) return false;
  try {
    execFileSync('redis-server', ['--version']);
    return existsSync(join(execFileSync(`${PG_BIN}/pg_config`, ['--pkglibdir']).toString().trim(), 'vector.so'));
  } catch {
    return false;
  }
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

describe.skipIf(!ciServicesReady())('npm run worker:dev without DATABASE_URL', () => {
  it(
    'Ctrl-C (SIGINT) stops the Postgres and Redis it started',
    async () => {
      const ci = await mkdtemp(join(tmpdir(), 'engram-worker-dev-ci-'));
      await chmod(ci, 0o755); // postgres runs as its own user and must reach its data directory
      const [pgPort, redisPort, port] = [await freePort(), await freePort(), await freePort()];
      let log = '';
      const p = spawn(
        process.execPath,
        ['--import', 'tsx', join(ROOT, 'test/standins/worker-dev.ts'), '--persist-to', join(ci, 'wrangler'), '--log-level', 'warn'],
        {
          cwd: ROOT,
          stdio: ['ignore', 'pipe', 'pipe'],
          env: {
            PATH: process.env.PATH,
            HOME: process.env.HOME,
            ENGRAM_CI_DIR: ci,
            ENGRAM_CI_PG_PORT: String(pgPort),
            ENGRAM_CI_REDIS_PORT: String(redisPort),
            PORT: String(port),
            INSPECTOR_PORT: String(await freePort()),
            DATA_DIR: ci,
            EMBEDDING_PROVIDER: 'hash',
            LOG_LEVEL: 'warn',
            CI: 'true',
            NO_COLOR: '1',
          },
        },
      );
      p.stdout?.on('data', (c) => (log += c));
      p.stderr?.on('data', (c) => (log += c));
      const gone = new Promise((r) => p.once('exit', r));
      try {
        const deadline = Date.now() + READY_TIMEOUT_MS;
        while (
          !(await fetch(`http://127.0.0.1:${port}/healthz`).then(
            (r) => r.ok,
            () => false,
          ))
        ) {
          if (p.exitCode !== null || Date.now() > deadline) throw new Error(`worker:dev did not start:\n${log}`);
          await new Promise((r) => setTimeout(r, 250));
        }
        expect(await listening(pgPort)).toBe(true);
        expect(await listening(redisPort)).toBe(true);
        p.kill('SIGINT');
        await Promise.race([gone, new Promise((r) => setTimeout(r, 6 * STOP_TIMEOUT_MS))]);
        expect(p.exitCode, log).toBe(0);
        expect(await listening(pgPort), log).toBe(false);
        expect(await listening(redisPort), log).toBe(false);
        expect(log).toMatch(/\[services\] postgres \(pid \d+\) stopped/);
      } finally {
        if (p.exitCode === null) p.kill('SIGKILL');
        // Whatever the test left running on its private ports.
        execFileSync('bash', [join(ROOT, '.ci/services.sh'), 'stop'], {
          env: { ...process.env, ENGRAM_CI_DIR: ci, ENGRAM_CI_PG_PORT: String(pgPort), ENGRAM_CI_REDIS_PORT: String(redisPort) },
          stdio: 'ignore',
        });
        await rm(ci, { recursive: true, force: true });
      }
    },
    READY_TIMEOUT_MS + 60_000,
  );
});
