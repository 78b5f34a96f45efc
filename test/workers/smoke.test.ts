import { env, exports } from 'cloudflare:workers';
import { SignJWT } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { errorOf, freshIp, testClient, uniqueEmail } from '../client';

/**
 * Runs inside workerd, next to the worker from wrangler.toml (functions/worker.ts). Every request
 * goes through the worker's own fetch handler: per-request Neon pool → local ws proxy → Postgres,
 * Upstash REST client → local proxy → Redis, QStash client → fake QStash. Bindings come from
 * global-setup.ts via vitest.config.ts.
 */
const worker = (exports as unknown as { default: { fetch(req: Request): Promise<Response> } }).default;
const bindings = env as unknown as Record<string, string>;

const call = testClient((req) => worker.fetch(req), { base: 'https://engram.test' });

describe('worker in workerd: public probes', () => {
  it('sees the bindings from global-setup over wrangler.toml [vars]', () => {
    expect(bindings.LOG_LEVEL).toBe('silent'); // wrangler.toml says info
    expect(bindings.MAIL_TRANSPORT).toBe('outbox'); // only in wrangler.toml
    expect(bindings.NEON_WS_PROXY).toMatch(/^127\.0\.0\.1:\d+$/);
  });

  it('GET /healthz is 200 without touching dependencies', async () => {
    const res = await call('GET', '/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
    expect(res.headers.get('x-request-id')).toBeTruthy();
  });

  it('GET /health without a key shows the overall status only', async () => {
    const res = await call('GET', '/health');
    expect(res.status, res.text).toBe(200);
    expect(res.body.status).toBe('healthy');
    expect(res.body.checks).toBeUndefined();
  });
});

describe('worker in workerd: keys, usage and health through Neon and Upstash', () => {
  let tenant: { tenantId: string; key: string; keyId: string };

  beforeAll(async () => {
    const res = await call('POST', '/admin/v1/tenants', {
      key: bindings.ADMIN_TOKEN,
      body: { email: uniqueEmail('workerd'), tier: 'free' },
    });
    expect(res.status, res.text).toBe(201);
    tenant = { tenantId: res.body.tenant_id, key: res.body.api_key, keyId: res.body.key_id };
    expect(tenant.key).toMatch(/^sk_/);
  });

  it('refuses the operator API without the admin token', async () => {
    const res = await call('POST', '/admin/v1/tenants', { key: 'not-the-admin-token', body: { email: uniqueEmail('x'), tier: 'free' } });
    expect(res.status).toBe(401);
  });

  it('GET /v1/usage counts api_calls in Postgres across requests', async () => {
    const first = await call('GET', '/v1/usage', { key: tenant.key });
    expect(first.status, first.text).toBe(200);
    const second = await call('GET', '/v1/usage', { key: tenant.key });
    expect(second.status, second.text).toBe(200);
    expect(first.body.api_calls.current).toBeGreaterThanOrEqual(1);
    expect(second.body.api_calls.current).toBe(first.body.api_calls.current + 1);
  });

  it('GET /health with a key reports database and Redis ok', async () => {
    const res = await call('GET', '/health', { key: tenant.key });
    expect(res.status, res.text).toBe(200);
    expect(res.body.status).toBe('healthy');
    expect(res.body.checks?.database.status).toBe('ok');
    expect(res.body.checks?.redis.status).toBe('ok');
  });

  it('rotates the key, revokes the old one, and the old key is then 401', async () => {
    const rotated = await call('POST', '/v1/keys/rotate', { key: tenant.key });
    expect(rotated.status, rotated.text).toBe(200);
    const newKey = rotated.body.new_key as string;
    expect(newKey).toMatch(/^sk_/);
    expect(newKey).not.toBe(tenant.key);

    const revoked = await call('POST', '/v1/keys/revoke', { key: newKey, body: { key_id: tenant.keyId } });
    expect(revoked.status, revoked.text).toBe(200);
    expect(revoked.body.revoked_key_id).toBe(tenant.keyId);

    const old = await call('GET', '/v1/usage', { key: tenant.key });
    expect(old.status).toBe(401);
    expect(errorOf(old).code).toBe('UNAUTHORIZED');
    expect((await call('GET', '/v1/usage', { key: newKey })).status).toBe(200);
  });
});

describe('worker in workerd: signup limiter in Redis', () => {
  it('allows two signups per CF-Connecting-IP, then 429', async () => {
    const ip = freshIp();
    const signup = () => call('POST', '/v1/keys', { body: { email: uniqueEmail('signup') }, headers: { 'cf-connecting-ip': ip } });
    const first = await signup();
    expect(first.status, first.text).toBe(201);
    expect(first.body).toMatchObject({ api_key: null, requires_verification: true });
    expect((await signup()).status).toBe(201);
    const third = await signup();
    expect(third.status, third.text).toBe(429);
    expect(errorOf(third).code).toBe('RATE_LIMITED');
    expect(Number(third.headers.get('retry-after'))).toBeGreaterThan(0);
    // Another address is unaffected.
    const other = await call('POST', '/v1/keys', { body: { email: uniqueEmail('signup') }, headers: { 'cf-connecting-ip': freshIp() } });
    expect(other.status, other.text).toBe(201);
  });
});

describe('worker in workerd: QStash callback', () => {
  // Valid QStash-style JWT (same claims the fake and real QStash use), for the tests to spoil.
  const sign = (key: string, url: string, body: string) =>
    crypto.subtle.digest('SHA-256', new TextEncoder().encode(body)).then((hash) => {
      const bodyHash = btoa(String.fromCharCode(...new Uint8Array(hash)))
        .replace(/\+/g, '-')
        .replace(/\//g, '_')
        .replace(/=+$/, '');
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ body: bodyHash })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setIssuer('Upstash')
        .setSubject(url)
        .setIssuedAt(now)
        .setNotBefore(now)
        .setExpirationTime(now + 300)
        .setJti(`jwt_${crypto.randomUUID()}`)
        .sign(new TextEncoder().encode(key));
    });
  const jobsUrl = () => new URL('/internal/jobs', bindings.PUBLIC_URL).toString();
  const post = (signature: string | null, raw = '{}') =>
    call('POST', '/internal/jobs', { raw, headers: { 'content-type': 'application/json', ...(signature === null ? {} : { 'upstash-signature': signature }) } });

  it('POST /internal/jobs with a bad signature is 401', async () => {
    const garbage = await post('not-a-jwt');
    expect(garbage.status, garbage.text).toBe(401);
    expect(errorOf(garbage).code).toBe('UNAUTHORIZED');
    expect((await post(null)).status).toBe(401);
  });

  // Well-formed signatures that must still fail. (A valid one is not sent: it would run due outbox
  // jobs of the shared test database, which may belong to other suites.)
  it('rejects a wrong signing key, another URL and a different body', async () => {
    const url = jobsUrl();
    expect((await post(await sign('sig_wrong_key', url, '{}'))).status).toBe(401);
    expect((await post(await sign(bindings.QSTASH_CURRENT_SIGNING_KEY!, 'https://elsewhere.invalid/internal/jobs', '{}'))).status).toBe(401);
    expect((await post(await sign(bindings.QSTASH_CURRENT_SIGNING_KEY!, url, '{"other":1}'))).status).toBe(401);
  });
});
