import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type RequestFn, testClient } from '../client';
import { freePort } from '../server-process';
import { startReceiver, verifySignature } from '../standins/webhook-receiver';
import { SseReader } from '../sse';

/**
 * Runs in Node: the real `wrangler dev` CLI (workerd from npm) serving functions/worker.ts with the
 * bindings from global-setup.ts passed as `--var KEY:VALUE`, then a few calls over HTTP.
 */
const ROOT = new URL('../..', import.meta.url).pathname;
const WRANGLER = join(ROOT, 'node_modules/wrangler/bin/wrangler.js');
const READY_TIMEOUT_MS = 60_000;
const REQUEST_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 5_000;

const bindings = inject('workerBindings');

let child: ChildProcess | null = null;
let exited: Promise<void> = Promise.resolve();
let persistDir: string | null = null;
let output = ''; // wrangler's own stdout/stderr, attached to failures
let base = '';
let receiver: Awaited<ReturnType<typeof startReceiver>>;

const append = (chunk: Buffer) => {
  output += chunk.toString();
  if (output.length > 20_000) output = output.slice(-20_000);
};

/** `base` is known once wrangler dev listens, so the client is made per call. */
const call: RequestFn = (method, path, opts) =>
  testClient((req) => fetch(req, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) }), { base })(method, path, opts);

async function waitUntilReady() {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let gone = false;
  void exited.then(() => (gone = true));
  while (Date.now() < deadline) {
    if (gone) throw new Error(`wrangler dev exited before it was ready (code ${child?.exitCode}, signal ${child?.signalCode}):\n${output}`);
    try {
      const res = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(2_000) });
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`wrangler dev did not answer GET /healthz within ${READY_TIMEOUT_MS} ms:\n${output}`);
}

/** SIGTERM to wrangler's whole process group (wrangler, esbuild, workerd), SIGKILL if it lingers. */
async function stopWrangler() {
  if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return;
  const group = -child.pid;
  const signal = (s: NodeJS.Signals) => {
    try {
      process.kill(group, s);
    } catch {
      /* already gone */
    }
  };
  signal('SIGTERM');
  const stopped = await Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), STOP_TIMEOUT_MS))]);
  // Also catch grandchildren that outlive a clean wrangler exit.
  signal('SIGKILL');
  if (!stopped) await Promise.race([exited, new Promise((r) => setTimeout(r, STOP_TIMEOUT_MS))]);
}

beforeAll(async () => {
  const port = await freePort();
  const inspectorPort = await freePort();
  base = `http://127.0.0.1:${port}`;
  persistDir = await mkdtemp(join(tmpdir(), 'engram-wrangler-dev-'));
  receiver = await startReceiver();
  // QStash (the stand-in) calls this worker back at PUBLIC_URL to run outbox jobs, and webhooks may
  // call the local receiver over http. A client that hangs up is noticed when the stream next
  // writes: beat often, so the event-stream test need not wait 15 s. An import of more than 20
  // lines runs as a job, as one of more than 10,000 does by default.
  const devBindings = { ...bindings, PUBLIC_URL: base, WEBHOOKS_ALLOW_INSECURE: '1', EVENT_STREAM_HEARTBEAT_MS: '500', IMPORT_INLINE_MAX_LINES: '20' };
  const vars = Object.entries(devBindings).flatMap(([k, v]) => ['--var', `${k}:${v}`]);
  const args = [
    WRANGLER,
    'dev',
    '--port',
    String(port),
    '--ip',
    '127.0.0.1',
    '--inspector-port',
    String(inspectorPort),
    '--inspector-ip',
    '127.0.0.1',
    '--persist-to',
    persistDir,
    '--show-interactive-dev-session=false',
    // No remote bindings (the AI binding would need a Cloudflare login); embeddings come from `hash`.
    '--local',
    '--log-level',
    'warn',
    ...vars,
  ];
  child = spawn(process.execPath, args, {
    cwd: ROOT,
    // Own process group, so afterAll can stop wrangler and everything it started in one signal.
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      CLOUDFLARE_CF_FETCH_ENABLED: 'false',
      WRANGLER_SEND_METRICS: 'false',
      CI: 'true',
      NO_COLOR: '1',
    },
  });
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  exited = new Promise((resolve) => child!.once('exit', () => resolve()));
  // Last resort if this test process goes away without afterAll (vitest killed, worker crash).
  const pgid = -child.pid!;
  process.once('exit', () => {
    try {
      process.kill(pgid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  });
  await waitUntilReady();
}, READY_TIMEOUT_MS + 10_000);

afterAll(async () => {
  await stopWrangler();
  await receiver?.close();
  if (persistDir) await rm(persistDir, { recursive: true, force: true });
}, 3 * STOP_TIMEOUT_MS);

describe('wrangler dev', () => {
  let key = '';
  let keyId = '';

  it('GET /healthz is 200', async () => {
    const res = await call('GET', '/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
  });

  it('GET /docs/scalar.js comes from the assets through the worker; the assets folder is not served as such', async () => {
    const script = await fetch(`${base}/docs/scalar.js`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    expect(script.status).toBe(200);
    expect(await script.text()).toContain('createApiReference');
    const direct = await call('GET', '/standalone.js');
    expect(direct.status).toBe(404);
  });

  it('creates a tenant through the operator API', async () => {
    const res = await call('POST', '/admin/v1/tenants', {
      key: bindings.ADMIN_TOKEN,
      body: { email: `wrangler-dev-${crypto.randomUUID().slice(0, 12)}@example.com`, tier: 'free' },
    });
    expect(res.status, `${res.text}\n${output}`).toBe(201);
    key = res.body.api_key;
    keyId = res.body.key_id;
    expect(key).toMatch(/^sk_/);
  });

  it('GET /v1/keys lists the one key', async () => {
    const res = await call('GET', '/v1/keys', { key });
    expect(res.status, `${res.text}\n${output}`).toBe(200);
    expect(res.body.keys).toHaveLength(1);
    expect(res.body.keys[0]).toMatchObject({ key_id: keyId, status: 'active' });
  });

  it('POST /v1/keys/rotate issues a new key', async () => {
    const res = await call('POST', '/v1/keys/rotate', { key });
    expect(res.status, `${res.text}\n${output}`).toBe(200);
    expect(res.body.new_key).toMatch(/^sk_/);
    expect(res.body.new_key).not.toBe(key);
    const list = await call('GET', '/v1/keys', { key: res.body.new_key });
    expect(list.status).toBe(200);
    expect(list.body.keys.map((k: { status: string }) => k.status).sort()).toEqual(['active', 'grace']);
  });

  it('delivers a webhook through QStash: commit, QStash calls /internal/jobs, the worker signs and sends', async () => {
    const tenant = await call('POST', '/admin/v1/tenants', {
      key: bindings.ADMIN_TOKEN,
      body: { email: `wrangler-hook-${crypto.randomUUID().slice(0, 12)}@example.com`, tier: 'pro' },
    });
    expect(tenant.status, tenant.text).toBe(201);
    const proKey = tenant.body.api_key as string;
    const hook = await call('POST', '/v1/webhooks', { key: proKey, body: { url: receiver.url('/workers'), events: ['memory.created'] } });
    expect(hook.status, `${hook.text}\n${output}`).toBe(201);
    const stored = await call('POST', '/v1/memories', { key: proKey, body: { observation: 'delivered from workerd' } });
    expect(stored.status, stored.text).toBe(201);
    await Promise.race([receiver.waitFor(1), new Promise((_, reject) => setTimeout(() => reject(new Error(`no delivery within 20 s:\n${output}`)), 20_000))]);
    const [delivery] = receiver.received;
    expect(delivery.json).toMatchObject({ type: 'memory.created', data: { memory: { observation: 'delivered from workerd' } } });
    expect(verifySignature(hook.body.secret, delivery.headers, delivery.body)).toBe(true);
    // The attempt is recorded once the receiver has answered.
    let log = await call('GET', `/v1/webhooks/${hook.body.webhook_id}/deliveries`, { key: proKey });
    for (let i = 0; i < 50 && !log.body.deliveries.length; i++) {
      await new Promise((r) => setTimeout(r, 100));
      log = await call('GET', `/v1/webhooks/${hook.body.webhook_id}/deliveries`, { key: proKey });
    }
    expect(log.body.deliveries[0]).toMatchObject({ success: true, attempt: 1, status_code: 200 });
  }, 30_000);

  it('stores a large import by a job through QStash, followed with GET /v1/imports/{id}', async () => {
    const tenant = await call('POST', '/admin/v1/tenants', {
      key: bindings.ADMIN_TOKEN,
      body: { email: `wrangler-import-${crypto.randomUUID().slice(0, 12)}@example.com`, tier: 'pro' },
    });
    expect(tenant.status, tenant.text).toBe(201);
    const key = tenant.body.api_key as string;
    const file = Array.from({ length: 150 }, (_, i) => JSON.stringify({ observation: `Imported on workerd ${i}`, tags: ['wd'] })).join('\n');
    const accepted = await call('POST', '/v1/import?format=jsonl', { key, raw: file, headers: { 'content-type': 'application/x-ndjson' } });
    expect(accepted.status, `${accepted.text}\n${output}`).toBe(202);
    expect(accepted.body).toMatchObject({ status: 'running', staged: 150 });
    const { id } = accepted.body as { id: string };
    let state = accepted.body as { status: string };
    for (let i = 0; i < 100 && state.status !== 'completed'; i++) {
      await new Promise((r) => setTimeout(r, 200));
      state = (await call('GET', `/v1/imports/${id}`, { key })).body as { status: string };
    }
    expect(state, output).toMatchObject({ status: 'completed', processed: 150, stored: { memory: 150 } });
  }, 40_000);
});

describe('wrangler dev: live event stream over HTTP', () => {
  it('a stream delivers an event of a write, and a client that hangs up frees its slot', async () => {
    const tenant = await call('POST', '/admin/v1/tenants', {
      key: bindings.ADMIN_TOKEN,
      body: { email: `wrangler-dev-sse-${crypto.randomUUID().slice(0, 12)}@example.com`, tier: 'pro' },
    });
    expect(tenant.status, `${tenant.text}\n${output}`).toBe(201);
    const key = tenant.body.api_key as string;
    const clients = Array.from({ length: 5 }, () => new AbortController());
    const opened = await Promise.all(clients.map((c) => fetch(`${base}/v1/events/stream`, { headers: { authorization: `Bearer ${key}` }, signal: c.signal })));
    expect(opened.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(opened[0].headers.get('content-type')).toBe('text/event-stream');
    const stream = new SseReader(opened[0].body!);

    const stored = await call('POST', '/v1/memories', { key, body: { observation: 'Streamed through wrangler dev.' } });
    expect(stored.status, stored.text).toBe(201);
    const [event] = await stream.events(1, 10_000);
    expect(event).toMatchObject({ id: '1', event: 'memory.created' });
    expect(JSON.parse(event.data!).data.memory.uuid).toBe(stored.body.id);

    expect((await call('GET', '/v1/events/stream', { key })).status).toBe(429);
    clients[0].abort(); // the client goes away: the connection closes
    let status = 0;
    const until = Date.now() + 10_000;
    while (status !== 200 && Date.now() < until) {
      const c = new AbortController();
      const res = await fetch(`${base}/v1/events/stream`, { headers: { authorization: `Bearer ${key}` }, signal: c.signal });
      status = res.status;
      c.abort();
      if (status !== 200) await new Promise((r) => setTimeout(r, 200));
    }
    expect(status, output).toBe(200);
    for (const c of clients) c.abort();
  });
});
