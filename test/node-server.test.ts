import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../shared/platform/contract/config';
import { freshIp, integration, uniqueEmail } from './harness';
import { freePort, startServer, stopServer } from './server-process';

const root = new URL('..', import.meta.url).pathname;
const ADMIN = 'node-server-admin-token-123';
const start = (env: Record<string, string>) => startServer({ ADMIN_TOKEN: ADMIN, LOG_LEVEL: 'info', ...env }, { timeoutMs: 30_000 });
const stop = (server: Awaited<ReturnType<typeof start>>) => stopServer(server);

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
      // Neither SHARE_BASE_URL nor PUBLIC_URL: start-up says invitation mails carry no link.
      expect(first.output()).toMatch(/"level":"warn".*SHARE_BASE_URL and PUBLIC_URL are not set/);
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
    expect(config).toMatchObject({ PORT: 8787, DATA_DIR: './.data', MAIL_TRANSPORT: 'outbox', RATE_LIMIT_SCALE: 1, TRUST_PROXY: 0, HOST: '127.0.0.1' });
    expect(() => parseConfig({ PORT: 'eighty' })).toThrow(/PORT/);
    expect(() => parseConfig({ MAIL_TRANSPORT: 'resend' })).toThrow(/RESEND_API_KEY/);
    expect(() => parseConfig({ ADMIN_TOKEN: 'short' })).toThrow(/ADMIN_TOKEN: must be at least 16/);
    expect(() => parseConfig({ UPSTASH_REDIS_REST_URL: 'https://x.upstash.io' })).toThrow(/set both/);
    expect(() => parseConfig({ QSTASH_TOKEN: 't' })).toThrow(/SIGNING_KEY/);
    expect(parseConfig({ TRUST_PROXY: '1', REDIS_URL: '' })).toMatchObject({ TRUST_PROXY: 1, REDIS_URL: undefined });
  });
});
