import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';

import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { developmentOperatorToken } from '../shared/node/first-run';
import { parseConfig } from '../shared/platform/contract/config';
import { hasFeature, tiers } from '../shared/platform/contract/tiers';
import { freePort } from './server-process';

/**
 * The real Node server as plain `npm start` runs it (no ADMIN_TOKEN, no DATABASE_URL, embedded
 * storage, default HOST), talked to over sockets.
 */
const root = new URL('..', import.meta.url).pathname;
const sh = promisify(execFile);

/** The environment of someone who typed only `npm start`: none of our settings inherited. */
const plainEnv = (extra: Record<string, string>) => {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !/^(DATABASE_URL|REDIS_URL|ADMIN_TOKEN|HOST|TRUST_PROXY|MAIL_TRANSPORT)$/.test(k)) env[k] = v;
  return { ...env, EMBEDDING_PROVIDER: 'hash', ...extra };
};

let proc: ChildProcess;
let out = '';
let port: number;
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'engram-first-run-'));
  port = await freePort();
  proc = spawn(process.execPath, ['--import', 'tsx', 'functions/node.ts'], {
    cwd: root,
    env: plainEnv({ PORT: String(port), DATA_DIR: dataDir }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const deadline = Date.now() + 60_000;
  while (!/curl -s -XPOST .*\/admin\/v1\/tenants/.test(out)) {
    if (proc.exitCode !== null) throw new Error(`server exited ${proc.exitCode}: ${out}`);
    if (Date.now() > deadline) throw new Error(`no first-run instructions within 60 s: ${out}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}, 70_000);

afterAll(async () => {
  if (proc && proc.exitCode === null) {
    const exited = new Promise((res) => proc.once('exit', res));
    proc.kill('SIGTERM');
    await exited;
  }
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('first run: plain npm start', () => {
  it('prints one command that returns a working API key', async () => {
    const command = out
      .split('\n')
      .find((l) => l.includes('/admin/v1/tenants'))!
      .trim();
    expect(command).toMatch(/^curl /);
    const { stdout } = await sh('sh', ['-c', command]);
    const created = JSON.parse(stdout) as { api_key: string };
    expect(created.api_key).toMatch(/^sk_/);
    const usage = await fetch(`http://127.0.0.1:${port}/v1/usage`, { headers: { authorization: `Bearer ${created.api_key}` } });
    expect(usage.status).toBe(200);
    // A Pro key, so what the docs show (audit verify, replay, ...) answers rather than 403.
    const body = (await usage.json()) as { tier: string; features: Record<string, boolean> };
    expect(body.tier).toBe('pro');
    expect(body.features).toMatchObject({ audit_verify: true, replay: true });
  });

  it('says which tier the key is on and what a free key lacks', () => {
    expect(out).toMatch(/Get an API key on the Pro tier/);
    const free = out.slice(out.indexOf('A free key'));
    expect(free).toMatch(/^A free key \("tier":"free", what POST \/v1\/keys signups get\) answers 403 to audit verify, replay, traces/);
    for (const feature of ['audit_verify', 'replay', 'traces'] as const) expect(hasFeature('free', feature)).toBe(false);
    expect(free).toContain(`${tiers.free.limits.rollbacks} rollbacks a month`);
  });

  it('listens on 127.0.0.1 by default, not on the machine’s other addresses', async () => {
    expect(out).toContain(`"url":"http://127.0.0.1:${port}"`);
    const external = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
    if (!external) return; // a machine with loopback only has nothing else to try
    const reached = await fetch(`http://${external}:${port}/healthz`, { signal: AbortSignal.timeout(3000) }).then(
      () => true,
      () => false,
    );
    expect(reached).toBe(false);
  });

  it('never makes a token with DATABASE_URL, a non-loopback HOST, or an ADMIN_TOKEN of its own', () => {
    expect(developmentOperatorToken(parseConfig({}))).toMatch(/^dev_/);
    expect(developmentOperatorToken(parseConfig({ HOST: '::1' }))).toMatch(/^dev_/);
    expect(developmentOperatorToken(parseConfig({ DATABASE_URL: 'postgres://db/engram' }))).toBeNull();
    expect(developmentOperatorToken(parseConfig({ HOST: '0.0.0.0' }))).toBeNull();
    expect(developmentOperatorToken(parseConfig({ HOST: '10.1.2.3' }))).toBeNull();
    expect(developmentOperatorToken(parseConfig({ ADMIN_TOKEN: 'a-token-of-my-own-0123456789' }))).toBeNull();
  });
});

describe('ADMIN_TOKEN on a non-loopback HOST', () => {
  it('refuses a weak or example token at start, before listening', async () => {
    const p = spawn(process.execPath, ['--import', 'tsx', 'functions/node.ts'], {
      cwd: root,
      env: plainEnv({ PORT: String(await freePort()), HOST: '0.0.0.0', ADMIN_TOKEN: 'change-me-please-1234', DATA_DIR: 'memory://' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    p.stderr!.on('data', (d) => (err += d));
    expect(await new Promise((res) => p.once('exit', res))).toBe(2);
    expect(err).toMatch(/ADMIN_TOKEN: .*refused on a non-loopback HOST/);
  }, 30_000);

  it('accepts weak tokens on loopback, and strong ones anywhere', () => {
    expect(() => parseConfig({ ADMIN_TOKEN: 'change-me-please-1234' })).not.toThrow();
    for (const token of ['change-me-please-1234', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 'my-admin-token-is-long-enough-1234567']) {
      expect(() => parseConfig({ HOST: '0.0.0.0', ADMIN_TOKEN: token })).toThrow(/ADMIN_TOKEN/);
    }
    expect(() => parseConfig({ HOST: '0.0.0.0', ADMIN_TOKEN: '3f9a0c2e7b1d48a6950e2c7d1b4f8a03c6e9d2b7' })).not.toThrow();
  });
});

interface Answer {
  status?: number;
  connection?: string;
  socket?: unknown;
  error?: string;
}

/** One request through `agent`, with the connection it went out on. */
function send(agent: http.Agent, method: string, path: string, body?: Buffer, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent,
        headers: { 'content-type': 'application/json', ...(body ? { 'content-length': String(body.length) } : {}), ...headers },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode, connection: res.headers.connection, socket: req.socket }));
        res.on('error', (e) => resolve({ error: (e as NodeJS.ErrnoException).code ?? e.message }));
      },
    );
    req.on('error', (e) => resolve({ error: (e as NodeJS.ErrnoException).code ?? e.message }));
    req.end(body);
  });
}

describe('keep-alive after an answer sent before the body was read', () => {
  const cases: [string, string, string, number, number][] = [
    ['401 (no key)', 'POST', '/v1/memories', 256_000, 401],
    ['401 (no key)', 'POST', '/v1/memories', 900_000, 401],
    ['404 (no route)', 'POST', '/v1/nowhere', 600_000, 404],
    ['413 (over 1 MiB)', 'POST', '/v1/memories', 2_000_000, 413],
  ];
  for (const [label, method, path, size, status] of cases) {
    it(`${label}, ${size} bytes: the next request on the same connection is answered`, async () => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      try {
        const body = Buffer.from(JSON.stringify({ observation: 'x'.repeat(size) }));
        for (let round = 0; round < 5; round++) {
          // Both at once: the agent writes the second as soon as the first is answered.
          const [first, second] = await Promise.all([send(agent, method, path, body), send(agent, 'GET', '/healthz')]);
          expect(first).toMatchObject({ status, connection: 'keep-alive' });
          expect(second).toMatchObject({ status: 200 });
          expect(second.socket).toBe(first.socket);
        }
      } finally {
        agent.destroy();
      }
    });
  }

  it('a body declared larger than is worth reading gets Connection: close, and the client reconnects', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const body = Buffer.alloc(9 * 1024 * 1024, 'x');
      const [first, second] = await Promise.all([send(agent, 'POST', '/v1/memories', body), send(agent, 'GET', '/healthz')]);
      expect(first).toMatchObject({ status: 413, connection: 'close' });
      expect(second).toMatchObject({ status: 200 });
      expect(second.socket).not.toBe(first.socket);
    } finally {
      agent.destroy();
    }
  });
});

describe('wrong method', () => {
  it('answers 405 with Allow over HTTP', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/usage`, { method: 'DELETE' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    expect(await res.json()).toMatchObject({ code: 'METHOD_NOT_ALLOWED', status: 405, request_id: res.headers.get('x-request-id') });
    const withParam = await fetch(`http://127.0.0.1:${port}/v1/memories/urn:uuid:0190b5a0-0000-7000-8000-000000000000`, { method: 'PUT' });
    expect(withParam.status).toBe(405);
    expect(withParam.headers.get('allow')).toMatch(/GET, HEAD.*DELETE/);
    expect((await fetch(`http://127.0.0.1:${port}/v1/nowhere`, { method: 'DELETE' })).status).toBe(404);
  });
});
