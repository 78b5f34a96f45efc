import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, errorOf, freshIp, storageName, type TestEngine, uniqueEmail } from './harness';

let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const HOUR = 3_600_000;

async function signup(email: string, ip = freshIp()) {
  return engine.request('POST', '/v1/keys', { body: { email }, headers: { 'x-forwarded-for': ip } });
}

async function signupAndVerify(email = uniqueEmail()) {
  expect((await signup(email)).status).toBe(201);
  const token = await engine.latestMailToken(email);
  const res = await engine.request('POST', '/v1/verify', { headers: { 'x-forwarded-for': freshIp() }, body: { token, email } });
  expect(res.status).toBe(200);
  return { email, key: res.body.api_key as string, keyId: res.body.key_id as string };
}

describe('signup and verification', () => {
  it('runs signup → mail token → verify → authenticated call → rotate → grace → revoke → 401', async () => {
    const email = uniqueEmail('ada');
    const created = await signup(email);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ api_key: null, tier: 'free', requires_verification: true });
    expect(Date.parse(created.body.created_at)).not.toBeNaN();

    const token = await engine.latestMailToken(email);
    expect(token).toMatch(/^vt_/);
    const verified = await engine.request('POST', '/v1/verify', { headers: { 'x-forwarded-for': freshIp() }, body: { token, email } });
    expect(verified.status).toBe(200);
    expect(verified.body).toMatchObject({ tier: 'free' });
    const key = verified.body.api_key as string;
    expect(key).toMatch(/^sk_[0-9A-Za-z]{43}$/);

    expect((await engine.request('GET', '/v1/usage', { key })).status).toBe(200);

    const rotated = await engine.request('POST', '/v1/keys/rotate', { key });
    expect(rotated.status).toBe(200);
    const newKey = rotated.body.new_key as string;
    expect(newKey).not.toBe(key);
    expect(Date.parse(rotated.body.grace_expires_at ?? '')).toBe(engine.clock.now().getTime() + 24 * HOUR);

    // Old key still works during the grace period, and so does the new one.
    expect((await engine.request('GET', '/v1/usage', { key })).status).toBe(200);
    expect((await engine.request('GET', '/v1/usage', { key: newKey })).status).toBe(200);

    const revoked = await engine.request('POST', '/v1/keys/revoke', { key: newKey, body: { key_id: key.slice(0, 12) } });
    expect(revoked.status).toBe(200);
    const old = await engine.request('GET', '/v1/usage', { key });
    expect(old.status).toBe(401);
    expect(errorOf(old).code).toBe('UNAUTHORIZED');
    expect((await engine.request('GET', '/v1/usage', { key: newKey })).status).toBe(200);
  });

  it('stores only hashes: neither the key nor the token appears in the database', async () => {
    const { key, email } = await signupAndVerify();
    const dump = await engine.sql<{ all: string }>(
      // Every text column of the tables that hold secrets, in one string.
      (await import('drizzle-orm')).sql`SELECT string_agg(k::text, ' ') AS all FROM (SELECT * FROM api_keys) k`,
    );
    const all = dump[0].all;
    expect(all).not.toContain(key);
    expect(all).toContain(key.slice(0, 12)); // the prefix is kept for revocation by prefix
    const tokens = await engine.sql<{ all: string }>(
      (await import('drizzle-orm'))
        .sql`SELECT string_agg(t::text, ' ') AS all FROM signup_tokens t JOIN tenants n ON n.id = t.tenant_id WHERE n.email = ${email}`,
    );
    expect(tokens[0].all).not.toMatch(/vt_/);
  });

  it('rejects bad e-mails and disposable domains with VALIDATION_ERROR naming the field', async () => {
    for (const email of ['', 'not-an-email', 'a@', `${'x'.repeat(250)}@example.com`]) {
      const res = await signup(email);
      expect(res.status, email).toBe(400);
      expect(errorOf(res).code).toBe('VALIDATION_ERROR');
      expect(errorOf(res).details?.[0].path).toBe('email');
    }
    for (const email of ['someone@mailinator.com', 'x@sub.guerrillamail.com']) {
      const res = await signup(email);
      expect(res.status, email).toBe(400);
      expect(res.body.message).toMatch(/disposable/);
    }
    const missing = await engine.request('POST', '/v1/keys', { body: {}, headers: { 'x-forwarded-for': freshIp() } });
    expect(missing.status).toBe(400);
    expect(errorOf(missing).details?.[0].path).toBe('email');
  });

  it('allows two signups per IP in 30 days, then 429 RATE_LIMITED', async () => {
    const ip = freshIp();
    expect((await signup(uniqueEmail(), ip)).status).toBe(201);
    expect((await signup(uniqueEmail(), ip)).status).toBe(201);
    const third = await signup(uniqueEmail(), ip);
    expect(third.status).toBe(429);
    expect(errorOf(third).code).toBe('RATE_LIMITED');
    expect(Number(third.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await signup(uniqueEmail(), freshIp())).status).toBe(201);
  });

  it('says in the 429 what the limit is, when the address may sign up again, and the way around it', async () => {
    const ip = freshIp();
    expect((await signup(uniqueEmail(), ip)).status).toBe(201);
    const first = engine.clock.now();
    engine.clock.advance(HOUR);
    expect((await signup(uniqueEmail(), ip)).status).toBe(201);
    const third = await signup(uniqueEmail(), ip);
    expect(third.status).toBe(429);
    const message = errorOf(third).message;
    expect(message).toMatch(/^At most 2 signups per client IP address in any 30 days/);
    expect(message).toContain('POST /admin/v1/tenants');
    const resets = first.getTime() + 30 * 24 * HOUR;
    // Redis counts the window without remembering when it started: then the full window is the bound.
    if (!engine.node.services.redis) {
      expect(message).toContain(`may sign up again at ${new Date(resets).toISOString()}`);
      expect(Number(third.headers.get('retry-after'))).toBe((resets - engine.clock.now().getTime()) / 1000);
    }
    expect(Number(third.headers.get('retry-after'))).toBeLessThanOrEqual(30 * 24 * 3600);
    // The same rule where a reader of /docs meets it, before the 429.
    const doc = (await engine.request('GET', '/openapi.json')).body as { paths: Record<string, { post: { description: string } }> };
    const described = doc.paths['/v1/keys'].post.description;
    expect(described).toContain('at most 2 signups per client IP address in any 30 days');
    expect(described).toContain('a 1-hour window');
    expect(described).toContain('POST /admin/v1/tenants');
  });

  it('gives a loopback client of the embedded default a one-hour window, and every other client 30 days', async () => {
    const loopback = `127.${[1, 2, 3].map(() => Math.floor(Math.random() * 250) + 1).join('.')}`;
    expect((await signup(uniqueEmail(), loopback)).status).toBe(201);
    expect((await signup(uniqueEmail(), loopback)).status).toBe(201);
    const third = await signup(uniqueEmail(), loopback);
    expect(third.status).toBe(429);
    if (storageName === 'embedded') {
      expect(errorOf(third).message).toMatch(/in any hour/);
      expect(Number(third.headers.get('retry-after'))).toBeLessThanOrEqual(3600);
      engine.clock.advance(HOUR + 1000);
      expect((await signup(uniqueEmail(), loopback)).status).toBe(201);
    } else {
      // A real deployment (DATABASE_URL) never shortens it: a proxy on the same host shows clients as 127.0.0.1.
      expect(errorOf(third).message).toMatch(/in any 30 days/);
      engine.clock.advance(HOUR + 1000);
      expect((await signup(uniqueEmail(), loopback)).status).toBe(429);
    }
  });

  it('counts concurrent signups from one IP exactly', async () => {
    const ip = freshIp();
    const results = await Promise.all(Array.from({ length: 6 }, () => signup(uniqueEmail(), ip)));
    expect(results.filter((r) => r.status === 201)).toHaveLength(2);
    expect(results.filter((r) => r.status === 429)).toHaveLength(4);
  });

  it('answers a second signup of a verified address the same way, without a new token', async () => {
    const { email } = await signupAndVerify();
    engine.clock.advance(1_000); // newest first: the second mail must be later than the first
    const again = await signup(email);
    expect(again.status).toBe(201);
    expect(again.body.api_key).toBeNull();
    const mail = await engine.admin('GET', `/admin/v1/mail?to=${encodeURIComponent(email)}`);
    expect(mail.body.messages[0].subject).toMatch(/already exists/);
    expect(mail.body.messages[0].token).toBeNull();
  });

  it('answers a signup of an existing address, verified or not, exactly as a new one: nothing stored shows', async () => {
    const { email: verified } = await signupAndVerify();
    const pending = uniqueEmail();
    expect((await signup(pending)).status).toBe(201);
    engine.clock.advance(3 * 24 * HOUR);
    try {
      const [fresh, again, stillPending] = [await signup(uniqueEmail()), await signup(verified), await signup(pending)];
      expect(fresh.status).toBe(201);
      expect(fresh.body.created_at).toBe(engine.clock.now().toISOString());
      expect({ status: again.status, body: again.body }).toEqual({ status: fresh.status, body: fresh.body });
      expect({ status: stillPending.status, body: stillPending.body }).toEqual({ status: fresh.status, body: fresh.body });
    } finally {
      engine.clock.advance(-3 * 24 * HOUR);
    }
  });

  it('verify: unknown account 404, wrong/used/expired/replaced token 400 INVALID_TOKEN', async () => {
    const unknown = await engine.request('POST', '/v1/verify', { headers: { 'x-forwarded-for': freshIp() }, body: { token: 'vt_x', email: uniqueEmail() } });
    expect(unknown.status).toBe(404);
    expect(errorOf(unknown).code).toBe('NOT_FOUND');

    const email = uniqueEmail();
    await signup(email);
    const first = await engine.latestMailToken(email);
    const wrong = await engine.request('POST', '/v1/verify', { headers: { 'x-forwarded-for': freshIp() }, body: { token: 'vt_wrong', email } });
    expect(wrong.status).toBe(400);
    expect(errorOf(wrong).code).toBe('INVALID_TOKEN');

    // A token only verifies the address it was sent to.
    const other = uniqueEmail();
    await signup(other);
    const crossed = await engine.request('POST', '/v1/verify', { headers: { 'x-forwarded-for': freshIp() }, body: { token: first, email: other } });
    expect(errorOf(crossed).code).toBe('INVALID_TOKEN');

    // A new signup (a second later) replaces the earlier token.
    engine.clock.advance(1_000);
    await signup(email);
    const second = await engine.latestMailToken(email);
    expect(second).not.toBe(first);
    expect(errorOf(await engine.request('POST', '/v1/verify', { headers: { 'x-forwarded-for': freshIp() }, body: { token: first, email } })).code).toBe(
      'INVALID_TOKEN',
    );
    expect((await engine.request('POST', '/v1/verify', { headers: { 'x-forwarded-for': freshIp() }, body: { token: second, email } })).status).toBe(200);
    expect(errorOf(await engine.request('POST', '/v1/verify', { headers: { 'x-forwarded-for': freshIp() }, body: { token: second, email } })).code).toBe(
      'INVALID_TOKEN',
    );

    const late = uniqueEmail();
    await signup(late);
    const lateToken = await engine.latestMailToken(late);
    engine.clock.advance(24 * HOUR + 1000);
    try {
      const expired = await engine.request('POST', '/v1/verify', { headers: { 'x-forwarded-for': freshIp() }, body: { token: lateToken, email: late } });
      expect(expired.status).toBe(400);
      expect(errorOf(expired).code).toBe('INVALID_TOKEN');
    } finally {
      engine.clock.advance(-(24 * HOUR + 1000));
    }
  });

  it('throttles verification: 20 attempts per client IP and 10 per e-mail an hour, then 429 RATE_LIMITED with Retry-After', async () => {
    const verify = (email: string, token: string, ip: string) =>
      engine.request('POST', '/v1/verify', { headers: { 'x-forwarded-for': ip }, body: { token, email } });
    // One address probing many accounts.
    const ip = freshIp();
    const probes = [];
    for (let i = 0; i < 20; i++) probes.push((await verify(uniqueEmail(), 'vt_guess', ip)).status);
    expect(probes.every((s) => s === 404)).toBe(true);
    const email = uniqueEmail();
    await signup(email);
    const token = await engine.latestMailToken(email);
    const refused = await verify(email, token, ip);
    expect(refused.status).toBe(429);
    expect(errorOf(refused).code).toBe('RATE_LIMITED');
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(3600);

    // Many addresses guessing one account's token.
    for (let i = 0; i < 10; i++) expect(errorOf(await verify(email, `vt_guess${i}`, freshIp())).code).toBe('INVALID_TOKEN');
    const spread = await verify(email, token, freshIp());
    expect(spread.status).toBe(429);
    expect(Number(spread.headers.get('retry-after'))).toBeGreaterThan(0);

    // The windows end; the token still verifies (it was never spent by a refused attempt).
    engine.clock.advance(HOUR);
    try {
      expect((await verify(email, token, ip)).status).toBe(200);
    } finally {
      engine.clock.advance(-HOUR);
    }
  });

  it('maintenance purges the verification windows of the Postgres limiter once they expired', async () => {
    const subject = `verify-ip:test-${crypto.randomUUID()}`;
    const now = engine.clock.now().getTime();
    for (const [start, expires] of [
      [now - 3 * HOUR, now - HOUR],
      [now, now + 2 * HOUR],
    ]) {
      await engine.node.services.db.execute(
        sql`INSERT INTO rate_windows (subject, window_start, hits, expires_at) VALUES (${subject}, ${new Date(start).toISOString()}, 3, ${new Date(expires).toISOString()})`,
      );
    }
    const done = await engine.node.runner.maintain();
    expect(done.expired_rate_windows).toBeGreaterThanOrEqual(1);
    const left = (await engine.node.services.db.execute(sql`SELECT window_start FROM rate_windows WHERE subject = ${subject}`)) as unknown as {
      rows: { window_start: string | Date }[];
    };
    expect(left.rows.map((r) => new Date(r.window_start).getTime())).toEqual([now]);
  });

  it('a token verifies once even when two requests race', async () => {
    const email = uniqueEmail();
    await signup(email);
    const token = await engine.latestMailToken(email);
    const [a, b] = await Promise.all([
      engine.request('POST', '/v1/verify', { headers: { 'x-forwarded-for': freshIp() }, body: { token, email } }),
      engine.request('POST', '/v1/verify', { headers: { 'x-forwarded-for': freshIp() }, body: { token, email } }),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 400]);
  });
});

describe('rotation, listing, revocation, expiry', () => {
  it('the old key stops working when its grace period ends', async () => {
    const tenant = await engine.newTenant();
    engine.clock.advance(1_000); // keys list oldest first: the new key must be younger
    const rotated = await engine.request('POST', '/v1/keys/rotate', { key: tenant.key });
    engine.clock.advance(24 * HOUR + 1000);
    try {
      const old = await engine.request('GET', '/v1/keys', { key: tenant.key });
      expect(old.status).toBe(401);
      expect(errorOf(old).message).toMatch(/expired/);
      const list = await engine.request('GET', '/v1/keys', { key: rotated.body.new_key });
      expect(list.status).toBe(200);
      expect(list.body.keys.map((k: { status: string }) => k.status)).toEqual(['expired', 'active']);
    } finally {
      engine.clock.advance(-(24 * HOUR + 1000));
    }
  });

  it('lists keys with their documented fields and never the secret', async () => {
    const tenant = await engine.newTenant('pro');
    engine.clock.advance(1_000);
    await engine.request('POST', '/v1/keys/rotate', { key: tenant.key });
    const list = await engine.request('GET', '/v1/keys', { key: tenant.key });
    expect(list.status).toBe(200);
    expect(list.body.keys).toHaveLength(2);
    const [old, current] = list.body.keys;
    expect(Object.keys(old).sort()).toEqual(
      [
        'agent_id',
        'created_at',
        'expires_at',
        'grace_expires_at',
        'key_id',
        'key_prefix',
        'name',
        'restricted',
        'revoked_at',
        'scopes',
        'space_ids',
        'status',
        'tier',
      ].sort(),
    );
    expect(old).toMatchObject({ key_id: tenant.keyId, status: 'grace', tier: 'pro', key_prefix: tenant.key.slice(0, 12) });
    expect(old).toMatchObject({ restricted: false, scopes: ['*'], name: null, agent_id: null, space_ids: null });
    expect(current.status).toBe('active');
    expect(list.text).not.toContain(tenant.key);
  });

  it('a rotated key may carry an expiry; after it the key answers 401', async () => {
    const tenant = await engine.newTenant();
    engine.clock.advance(1_000);
    const expiresAt = new Date(engine.clock.now().getTime() + 2 * HOUR).toISOString();
    const rotated = await engine.request('POST', '/v1/keys/rotate', { key: tenant.key, body: { expires_at: expiresAt } });
    expect(rotated.status).toBe(200);
    const newKey = rotated.body.new_key;
    expect((await engine.request('GET', '/v1/keys', { key: newKey })).body.keys[1].expires_at).toBe(expiresAt.replace(/\.\d+Z$/, (m) => m));
    engine.clock.advance(3 * HOUR);
    try {
      expect((await engine.request('GET', '/v1/keys', { key: newKey })).status).toBe(401);
    } finally {
      engine.clock.advance(-3 * HOUR);
    }
    const past = await engine.request('POST', '/v1/keys/rotate', { key: newKey, body: { expires_at: '2001-01-01T00:00:00Z' } });
    expect(past.status).toBe(400);
    expect(errorOf(past).details?.[0].path).toBe('expires_at');
    const junk = await engine.request('POST', '/v1/keys/rotate', { key: newKey, body: { expires_at: 'tomorrow' } });
    expect(junk.status).toBe(400);
  });

  it('revoke: by id or prefix, 404 for unknown or another tenant’s key, idempotent, audited', async () => {
    const a = await engine.newTenant();
    const b = await engine.newTenant();
    const foreign = await engine.request('POST', '/v1/keys/revoke', { key: a.key, body: { key_id: b.keyId } });
    expect(foreign.status).toBe(404);
    const foreignPrefix = await engine.request('POST', '/v1/keys/revoke', { key: a.key, body: { key_id: b.key.slice(0, 12) } });
    expect(foreignPrefix.status).toBe(404);
    expect((await engine.request('GET', '/v1/keys', { key: b.key })).status).toBe(200);

    const rotated = await engine.request('POST', '/v1/keys/rotate', { key: a.key });
    const res = await engine.request('POST', '/v1/keys/revoke', { key: rotated.body.new_key, body: { key_id: a.keyId } });
    expect(res.body).toMatchObject({ revoked_key_id: a.keyId });
    const again = await engine.request('POST', '/v1/keys/revoke', { key: rotated.body.new_key, body: { key_id: a.keyId } });
    expect(again.status).toBe(200);
    expect(again.body.message).toMatch(/already/);
    const empty = await engine.request('POST', '/v1/keys/revoke', { key: rotated.body.new_key, body: { key_id: '' } });
    expect(empty.status).toBe(400);

    const { sql } = await import('drizzle-orm');
    const audit = await engine.sql<{ operation: string }>(sql`SELECT operation FROM audit_log WHERE tenant_id = ${a.tenantId} ORDER BY seq`);
    expect(audit.map((r) => r.operation)).toEqual(['tenant.created', 'key.created', 'key.created', 'key.rotated', 'key.revoked']);
  });

  it('revocation takes effect on the very next request, even right after the key was used', async () => {
    const tenant = await engine.newTenant();
    const second = (await engine.request('POST', '/v1/keys/rotate', { key: tenant.key })).body.new_key;
    const warm = await Promise.all(Array.from({ length: 5 }, () => engine.request('GET', '/v1/usage', { key: tenant.key })));
    expect(warm.every((r) => r.status === 200)).toBe(true);
    await engine.request('POST', '/v1/keys/revoke', { key: second, body: { key_id: tenant.keyId } });
    expect((await engine.request('GET', '/v1/usage', { key: tenant.key })).status).toBe(401);
  });

  it('a request is served while the keys change under it without pause, and a revocation among the changes still counts', async (ctx) => {
    const gate = engine.node.services.gate;
    if (!gate) ctx.skip(); // without Redis there is no key epoch to change
    const tenant = await engine.newTenant();
    expect((await engine.request('GET', '/v1/usage', { key: tenant.key })).status).toBe(200); // cached with its epoch
    // Every gate call meets an epoch changed since the key was read, as when a tenant's keys change
    // faster than a request can read them again.
    const admit = gate!.admit.bind(gate);
    gate!.admit = async (hit) => {
      await gate!.bumpKeyEpoch(hit.tenantId);
      return admit(hit);
    };
    try {
      const served = await Promise.all(Array.from({ length: 5 }, () => engine.request('GET', '/v1/usage', { key: tenant.key })));
      expect(served.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
      expect(served[0].headers.get('ratelimit-policy')).toBeTruthy();
      const second = (await engine.request('POST', '/v1/keys/rotate', { key: tenant.key })).body.new_key;
      expect((await engine.request('POST', '/v1/keys/revoke', { key: second, body: { key_id: tenant.keyId } })).status).toBe(200);
      expect((await engine.request('GET', '/v1/usage', { key: tenant.key })).status).toBe(401);
    } finally {
      gate!.admit = admit;
    }
  });

  it('a key revoked through one instance is refused by another on its very next request, and a tier change shows there at once', async (ctx) => {
    if (engine.node.services.storage === 'embedded') ctx.skip(); // embedded PGlite belongs to one process; the integration run covers this
    const other = await createEngine();
    try {
      const tenant = await engine.newTenant();
      // The other instance has the key cached (and counted it) before anything changes.
      const warm = await Promise.all(Array.from({ length: 5 }, () => other.request('GET', '/v1/usage', { key: tenant.key })));
      expect(warm.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
      expect((await engine.admin('PATCH', `/admin/v1/tenants/${tenant.tenantId}`, { tier: 'pro' })).status).toBe(200);
      expect((await other.request('GET', '/v1/usage', { key: tenant.key })).body.tier).toBe('pro');
      const second = (await engine.request('POST', '/v1/keys/rotate', { key: tenant.key })).body.new_key;
      expect((await other.request('GET', '/v1/usage', { key: tenant.key })).status).toBe(200); // grace
      expect((await engine.request('POST', '/v1/keys/revoke', { key: second, body: { key_id: tenant.keyId } })).status).toBe(200);
      const next = await other.request('GET', '/v1/usage', { key: tenant.key });
      expect(next.status).toBe(401);
      expect(errorOf(next).code).toBe('UNAUTHORIZED');
      expect((await other.request('GET', '/health', { key: tenant.key })).status).toBe(401);
      // Counted on both instances, the refused request not: 5 + 1 + 1 (grace) there, rotate and
      // revoke here, and this report.
      expect((await other.request('GET', '/v1/usage', { key: second })).body.api_calls.current).toBe(10);
    } finally {
      await other.close();
    }
  });
});

describe('a rotated-out key keeps data access but loses key management', () => {
  it('a key in grace cannot rotate again or revoke the key that replaced it (403), yet still reads data', async () => {
    const tenant = await engine.newTenant();
    engine.clock.advance(1_000);
    const rotated = await engine.request('POST', '/v1/keys/rotate', { key: tenant.key });
    expect(rotated.status).toBe(200);
    const again = await engine.request('POST', '/v1/keys/rotate', { key: tenant.key });
    expect(again.status).toBe(403);
    expect(errorOf(again).code).toBe('FORBIDDEN');
    const lockout = await engine.request('POST', '/v1/keys/revoke', { key: tenant.key, body: { key_id: rotated.body.key_id } });
    expect(lockout.status).toBe(403);
    expect((await engine.request('GET', '/v1/usage', { key: rotated.body.new_key })).status).toBe(200);
    expect((await engine.request('GET', '/v1/memories', { key: tenant.key })).status).toBe(200);
    const keys = await engine.request('GET', '/v1/keys', { key: rotated.body.new_key });
    expect(keys.body.keys.map((k: { status: string }) => k.status)).toEqual(['grace', 'active']);
  });

  it('at most one key is in grace: rotating again ends the grace of the key rotated out before', async () => {
    const tenant = await engine.newTenant();
    engine.clock.advance(1_000); // the keys list is oldest first
    const second = await engine.request('POST', '/v1/keys/rotate', { key: tenant.key });
    engine.clock.advance(1_000);
    const third = await engine.request('POST', '/v1/keys/rotate', { key: second.body.new_key });
    expect(third.status).toBe(200);
    const first = await engine.request('GET', '/v1/usage', { key: tenant.key });
    expect(first.status).toBe(401);
    expect(errorOf(first).code).toBe('UNAUTHORIZED');
    expect((await engine.request('GET', '/v1/usage', { key: second.body.new_key })).status).toBe(200);
    expect((await engine.request('GET', '/v1/usage', { key: third.body.new_key })).status).toBe(200);
    const keys = await engine.request('GET', '/v1/keys', { key: third.body.new_key });
    expect(keys.body.keys.map((k: { key_id: string; status: string; grace_expires_at: string | null }) => [k.key_id, k.status, k.grace_expires_at])).toEqual([
      [tenant.keyId, 'expired', engine.clock.now().toISOString()],
      [second.body.key_id, 'grace', third.body.grace_expires_at],
      [third.body.key_id, 'active', null],
    ]);
  });

  it('a key whose grace a rotation ended is refused by another instance on its very next request', async (ctx) => {
    if (engine.node.services.storage === 'embedded') ctx.skip(); // embedded PGlite belongs to one process; the integration run covers this
    const other = await createEngine();
    other.clock.set(engine.clock.now()); // one time on both instances, as on real ones
    try {
      const tenant = await engine.newTenant();
      const second = (await engine.request('POST', '/v1/keys/rotate', { key: tenant.key })).body.new_key;
      expect((await other.request('GET', '/v1/usage', { key: tenant.key })).status).toBe(200); // cached there, in grace
      expect((await engine.request('POST', '/v1/keys/rotate', { key: second })).status).toBe(200);
      expect((await other.request('GET', '/v1/usage', { key: tenant.key })).status).toBe(401);
      expect((await other.request('GET', '/health', { key: tenant.key })).status).toBe(401);
    } finally {
      await other.close();
    }
  });

  it('parallel rotations of one key make exactly one new key', async () => {
    const tenant = await engine.newTenant();
    const results = await Promise.all(Array.from({ length: 20 }, () => engine.request('POST', '/v1/keys/rotate', { key: tenant.key })));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 403)).toHaveLength(19);
    const winner = results.find((r) => r.status === 200)!;
    const keys = await engine.request('GET', '/v1/keys', { key: winner.body.new_key });
    expect(keys.body.keys.filter((k: { status: string }) => k.status === 'active')).toHaveLength(1);
  });
});
