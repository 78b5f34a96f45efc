import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../shared/config';
import { freshIp, integration, uniqueEmail } from './harness';

const root = new URL('..', import.meta.url).pathname;
const ADMIN = 'node-server-admin-token-123';

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

interface Running {
  proc: ChildProcess;
  base: string;
  output: () => string;
}

/** Starts the real entry point the way `npm start` does and waits until it answers. */
async function start(env: Record<string, string>): Promise<Running> {
  const port = await freePort();
  let out = '';
  const proc = spawn(process.execPath, ['--import', 'tsx', 'functions/node.ts'], {
    cwd: root,
    env: { ...process.env, PORT: String(port), ADMIN_TOKEN: ADMIN, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`server exited ${proc.exitCode}: ${out}`);
    try {
      if ((await fetch(`${base}/healthz`)).ok) return { proc, base, output: () => out };
    } catch {
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  proc.kill('SIGKILL');
  throw new Error(`server did not start: ${out}`);
}

async function stop(r: Running) {
  const exited = new Promise((res) => r.proc.once('exit', res));
  r.proc.kill('SIGTERM');
  await exited;
}

const post = (base: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('npm start (Node entry point)', () => {
  it('keeps all data across a restart, and no secret reaches the log', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'engram-node-'));
    dirs.push(dataDir);
    const env: Record<string, string> = {
      TRUST_PROXY: '1',
      EMBEDDING_PROVIDER: 'hash',
      ...(integration.databaseUrl ? { DATABASE_URL: integration.databaseUrl, REDIS_URL: integration.redisUrl ?? '' } : { DATA_DIR: dataDir }),
    };
    const email = uniqueEmail('restart');

    const first = await start(env);
    let token: string;
    try {
      // Redis keeps signup windows across runs; a fresh forwarded address keeps reruns independent.
      expect((await post(first.base, '/v1/keys', { email }, { 'x-forwarded-for': freshIp() })).status).toBe(201);
      const mail = await fetch(`${first.base}/admin/v1/mail?to=${encodeURIComponent(email)}`, { headers: { authorization: `Bearer ${ADMIN}` } });
      token = ((await mail.json()) as { messages: { token: string }[] }).messages[0].token;
      expect(first.output()).toContain('engram listening');
      expect(first.output()).not.toContain(token); // the token never reaches the log
    } finally {
      await stop(first);
    }

    const second = await start(env);
    try {
      const verified = await post(second.base, '/v1/verify', { token, email });
      expect(verified.status).toBe(200);
      const { api_key } = (await verified.json()) as { api_key: string };
      const usage = await fetch(`${second.base}/v1/usage`, { headers: { authorization: `Bearer ${api_key}` } });
      expect(usage.status).toBe(200);
      expect(second.output()).not.toContain(api_key);
    } finally {
      await stop(second);
    }
  }, 90_000);

  it('refuses to start on bad configuration with a message naming the setting', async () => {
    const port = await freePort();
    const proc = spawn(process.execPath, ['--import', 'tsx', 'functions/node.ts'], {
      cwd: root,
      env: { ...process.env, PORT: String(port), DATABASE_URL: 'mysql://nope', MAIL_TRANSPORT: 'resend', RESEND_API_KEY: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    proc.stderr!.on('data', (d) => (out += d));
    const code = await new Promise((res) => proc.once('exit', res));
    expect(code).toBe(2);
    expect(out).toContain('DATABASE_URL');
  }, 30_000);
});

describe('configuration', () => {
  it('applies defaults and explains every problem', () => {
    const config = parseConfig({});
    expect(config).toMatchObject({ PORT: 8787, DATA_DIR: './.data', MAIL_TRANSPORT: 'outbox', RATE_LIMIT_SCALE: 1, TRUST_PROXY: false });
    expect(() => parseConfig({ PORT: 'eighty' })).toThrow(/PORT/);
    expect(() => parseConfig({ MAIL_TRANSPORT: 'resend' })).toThrow(/RESEND_API_KEY/);
    expect(() => parseConfig({ ADMIN_TOKEN: 'short' })).toThrow(/ADMIN_TOKEN: must be at least 16/);
    expect(() => parseConfig({ UPSTASH_REDIS_REST_URL: 'https://x.upstash.io' })).toThrow(/set both/);
    expect(() => parseConfig({ QSTASH_TOKEN: 't' })).toThrow(/SIGNING_KEY/);
    expect(parseConfig({ TRUST_PROXY: '1', REDIS_URL: '' })).toMatchObject({ TRUST_PROXY: true, REDIS_URL: undefined });
  });
});
