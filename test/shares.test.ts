import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, errorOf, type Tenant, type TestEngine } from './harness';
import { DAY, sharingHelpers, UNKNOWN_UUID } from './sharing-helpers';

let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const h = sharingHelpers(() => engine);
const check = (token: string) => engine.request('GET', `/v1/spaces/token/${encodeURIComponent(token)}`);
const listOf = (t: Tenant) => engine.request('GET', '/v1/spaces/shared', { key: t.key });
const pair = async (ownerTier: Tenant['tier'] = 'starter', recipientTier: Tenant['tier'] = 'starter') =>
  [await engine.newTenant(ownerTier as never), await engine.newTenant(recipientTier as never)] as const;

describe('create', () => {
  it('creates a tag share, mails the token, stores only its hash; audited; first_share milestone', async () => {
    const [owner, recipient] = await pair();
    const res = await h.share(owner, { tag: ' billing ', email: recipient.email.toUpperCase() });
    expect(res.status, res.text).toBe(201);
    const { token, share_id } = res.body;
    expect(token).toMatch(/^st_[0-9A-Za-z]{40}$/);
    expect(share_id).toMatch(/^shr_[0-9A-Za-z]{22}$/);
    expect(res.body).toMatchObject({
      token_prefix: token.slice(0, 10),
      share_url: `/join?token=${token}`,
      tag: 'billing',
      kind: 'tag',
      space_id: null,
      shared_with_email: recipient.email,
      permission: 'read',
    });
    expect(Date.parse(res.body.expires_at)).toBe(engine.clock.now().getTime() + 30 * DAY);
    expect(res.body.message).toMatch(/Invitation sent/);
    expect(await engine.latestMailToken(recipient.email)).toBe(token);

    const stored = await engine.sql<{ row: string }>(sql`SELECT s::text AS row FROM shares s WHERE id = ${share_id}`);
    expect(stored[0].row).not.toContain(token);
    expect(stored[0].row).toContain(token.slice(0, 10));

    const entry = (await h.audit(owner.tenantId)).at(-1);
    expect(entry).toMatchObject({ operation: 'share.created', resource_type: 'share', resource_id: share_id, actor: owner.keyId });
    expect(entry?.metadata).toMatchObject({ kind: 'tag', tag: 'billing', permission: 'read', shared_with_email: recipient.email });
    expect(await h.milestones(owner)).toContain('first_share');
  });

  it('share_url uses SHARE_BASE_URL when configured', async () => {
    const other = await (await import('./harness')).createEngine({ env: { SHARE_BASE_URL: 'https://app.example.com/' } });
    try {
      const owner = await other.newTenant('starter');
      const res = await other.request('POST', '/v1/spaces/share', { key: owner.key, body: { tag: 't', email: 'x@example.com', permission: 'write' } });
      expect(res.status).toBe(201);
      expect(res.body.share_url).toBe(`https://app.example.com/join?token=${res.body.token}`);
      expect(res.body.permission).toBe('write');
    } finally {
      await other.close();
    }
  });

  it('rejects bad input with VALIDATION_ERROR naming the field', async () => {
    const [owner] = await pair();
    const cases: [Record<string, unknown>, string][] = [
      [{ email: 'a@example.com' }, 'tag'],
      [{ tag: '', email: 'a@example.com' }, 'tag'],
      [{ tag: 'x'.repeat(51), email: 'a@example.com' }, 'tag'],
      [{ tag: 'x' }, 'email'],
      [{ tag: 'x', email: 'not-an-email' }, 'email'],
      [{ tag: 'x', email: 'a@example.com', permission: 'admin' }, 'permission'],
      [{ tag: 'x', email: owner.email }, 'email'],
    ];
    for (const [body, path] of cases) {
      const res = await h.share(owner, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(errorOf(res).code).toBe('VALIDATION_ERROR');
      expect(errorOf(res).details?.[0].path).toBe(path);
    }
    expect((await h.share(owner, { tag: 'x'.repeat(50), email: 'a@example.com' })).status).toBe(201);
  });

  it('sharing needs Starter+, sharing a space needs Pro+ (403 FEATURE_NOT_AVAILABLE with tiers)', async () => {
    const free = await engine.newTenant('free');
    const refused = await h.share(free, { tag: 'x', email: 'a@example.com' });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'FEATURE_NOT_AVAILABLE', required_tier: 'starter', current_tier: 'free' });

    const starter = await engine.newTenant('starter');
    const space = (await h.createSpace(starter, { name: 's' })).body.space_id;
    const spaceRefused = await h.share(starter, { tag: space, email: 'a@example.com' });
    expect(spaceRefused.status).toBe(403);
    expect(spaceRefused.body).toMatchObject({ code: 'FEATURE_NOT_AVAILABLE', required_tier: 'pro', current_tier: 'starter' });

    const pro = await engine.newTenant('pro');
    const proSpace = (await h.createSpace(pro, { name: 's' })).body.space_id;
    const ok = await h.share(pro, { tag: proSpace.slice('urn:uuid:'.length), email: 'a@example.com' });
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({ kind: 'space', space_id: proSpace, tag: proSpace });
    // A uuid that is not a space of yours is just a tag.
    const foreign = await h.share(pro, { tag: space, email: 'a@example.com' });
    expect(foreign.body).toMatchObject({ kind: 'tag', tag: space, space_id: null });
    expect((await h.share(pro, { tag: `urn:uuid:${UNKNOWN_UUID}`, email: 'a@example.com' })).body.kind).toBe('tag');
  });
});

describe('token check and join', () => {
  it('public check: valid, not_found, and only a valid token shows owner, tag and permission', async () => {
    const [owner, recipient] = await pair();
    const { token } = (await h.share(owner, { tag: 'ops', email: recipient.email, permission: 'write' })).body;
    const ok = await check(token);
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({
      valid: true,
      owner_tenant_id: owner.tenantId,
      tag: 'ops',
      permission: 'write',
      already_accepted: false,
      expires_at: expect.any(String),
      error: null,
    });
    expect((await check('st_doesnotexist')).body).toEqual({ valid: false, already_accepted: false, expires_at: null, error: 'not_found' });
    await h.join(recipient, token);
    // Accepted: the token no longer says whose share it is or what it grants.
    expect((await check(token)).body).toEqual({ valid: true, already_accepted: true, expires_at: ok.body.expires_at, error: null });
    const expired = await h.later(31 * DAY, () => check(token));
    expect(expired.body).toEqual({ valid: false, already_accepted: true, expires_at: ok.body.expires_at, error: 'expired' });
  });

  it('join binds the share to the invited address only; repeat is idempotent; audited in both chains', async () => {
    const [owner, recipient] = await pair();
    const intruder = await engine.newTenant('pro');
    const { token, share_id } = (await h.share(owner, { tag: 'ops', email: recipient.email.toUpperCase() })).body;

    const wrong = await h.join(intruder, token);
    expect(wrong.status).toBe(400);
    expect(errorOf(wrong).code).toBe('INVALID_TOKEN');
    const self = await h.join(owner, token);
    expect(errorOf(self).code).toBe('INVALID_TOKEN');

    const joined = await h.join(recipient, token);
    expect(joined.status).toBe(200);
    expect(joined.body).toMatchObject({ success: true, share_id, tag: 'ops', kind: 'tag', owner_tenant_id: owner.tenantId, permission: 'read' });
    expect(joined.body.expires_at).toBe((await check(token)).body.expires_at);
    const again = await h.join(recipient, token);
    expect(again.status).toBe(200);
    expect(again.body.message).toMatch(/already/);
    expect(errorOf(await h.join(intruder, token)).code).toBe('INVALID_TOKEN');

    expect((await h.audit(owner.tenantId)).filter((a) => a.operation === 'share.accepted')).toHaveLength(1);
    const mine = (await h.audit(recipient.tenantId)).filter((a) => a.operation === 'share.joined');
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ resource_id: share_id, metadata: { owner_tenant_id: owner.tenantId } });
  });

  it('join refuses unknown, expired and revoked tokens, free tiers, and a missing token', async () => {
    const [owner, recipient] = await pair();
    expect(errorOf(await h.join(recipient, 'st_unknown')).code).toBe('INVALID_TOKEN');
    const a = (await h.share(owner, { tag: 'a', email: recipient.email })).body.token;
    const late = await h.later(30 * DAY + 1000, () => h.join(recipient, a));
    expect(late.status).toBe(400);
    expect(errorOf(late).code).toBe('INVALID_TOKEN');
    const b = (await h.share(owner, { tag: 'b', email: recipient.email })).body;
    await engine.request('DELETE', `/v1/spaces/share/${b.token}`, { key: owner.key });
    expect(errorOf(await h.join(recipient, b.token)).code).toBe('INVALID_TOKEN');
    expect((await check(b.token)).body).toMatchObject({ valid: false, error: 'revoked' });
    expect((await check(b.token)).body.owner_tenant_id).toBeUndefined();

    const free = await engine.newTenant('free');
    const c = (await h.share(owner, { tag: 'c', email: free.email })).body.token;
    const refused = await h.join(free, c);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'FEATURE_NOT_AVAILABLE', required_tier: 'starter', current_tier: 'free' });
    const missing = await engine.request('POST', '/v1/spaces/join', { key: recipient.key, body: {} });
    expect(missing.status).toBe(400);
    expect(errorOf(missing).details?.[0].path).toBe('token');
  });
});

describe('listing', () => {
  it('shared_by_me and shared_with_me carry the invitation fields, never the token', async () => {
    const [owner, recipient] = await pair();
    const created = (await h.share(owner, { tag: 'ops', email: recipient.email })).body;
    const pending = (await listOf(recipient)).body;
    expect(pending.shared_by_me).toEqual([]);
    expect(pending.shared_with_me).toHaveLength(1);
    expect(pending.shared_with_me[0]).toMatchObject({ share_id: created.share_id, status: 'pending', accepted: false });

    await h.join(recipient, created.token);
    const byMe = await listOf(owner);
    expect(byMe.status).toBe(200);
    expect(byMe.text).not.toContain(created.token);
    expect(byMe.body.shared_with_me).toEqual([]);
    expect(byMe.body.shared_by_me).toEqual([
      {
        share_id: created.share_id,
        token: null,
        token_prefix: created.token_prefix,
        share_url: null,
        tag: 'ops',
        kind: 'tag',
        space_id: null,
        shared_with_email: recipient.email,
        permission: 'read',
        owner_tenant_id: owner.tenantId,
        accepted: true,
        accepted_by_tenant: recipient.tenantId,
        accepted_at: expect.any(String),
        created_at: expect.any(String),
        expires_at: created.expires_at,
        revoked_at: null,
        status: 'accepted',
      },
    ]);
    await engine.request('DELETE', `/v1/spaces/share/${created.share_id}`, { key: owner.key });
    expect((await listOf(recipient)).body.shared_with_me[0]).toMatchObject({ status: 'revoked', revoked_at: expect.any(String) });
  });
});

describe('rotate and revoke', () => {
  it('rotate (by token or share id): new token, old one dead, mail re-sent, acceptance kept; audited', async () => {
    const [owner, recipient] = await pair();
    const first = (await h.share(owner, { tag: 'ops', email: recipient.email })).body;
    engine.clock.advance(1_000); // the re-sent mail must be the newest
    const rotated = await engine.request('POST', `/v1/spaces/share/${first.token}/rotate`, { key: owner.key });
    expect(rotated.status, rotated.text).toBe(200);
    expect(Object.keys(rotated.body).sort()).toEqual(Object.keys(first).sort());
    expect(rotated.body).toMatchObject({ share_id: first.share_id, tag: 'ops', permission: 'read', shared_with_email: recipient.email });
    expect(rotated.body.token).not.toBe(first.token);
    expect(await engine.latestMailToken(recipient.email)).toBe(rotated.body.token);
    expect((await check(first.token)).body.error).toBe('not_found');
    expect(errorOf(await h.join(recipient, first.token)).code).toBe('INVALID_TOKEN');
    expect((await h.join(recipient, rotated.body.token)).status).toBe(200);

    const byId = await engine.request('POST', `/v1/spaces/share/${first.share_id}/rotate`, { key: owner.key });
    expect(byId.status).toBe(200);
    expect(byId.body.message).toMatch(/keeps access/);
    expect((await listOf(owner)).body.shared_by_me[0]).toMatchObject({
      accepted: true,
      accepted_by_tenant: recipient.tenantId,
      token_prefix: byId.body.token.slice(0, 10),
    });
    // A rotation renews the lifetime: the share outlives the first 30 days.
    const renewed = await h.later(20 * DAY, () => engine.request('POST', `/v1/spaces/share/${first.share_id}/rotate`, { key: owner.key }));
    expect(await h.later(40 * DAY, () => check(renewed.body.token).then((r) => r.body.valid))).toBe(true);
    const rotations = (await h.audit(owner.tenantId)).filter((a) => a.operation === 'share.rotated');
    expect(rotations).toHaveLength(3);
    expect(rotations[0].metadata).toMatchObject({ old_token_prefix: first.token_prefix, token_prefix: rotated.body.token_prefix });
  });

  it("owner only: someone else's share is 403 FORBIDDEN, unknown 404, revoked cannot be rotated", async () => {
    const [owner, recipient] = await pair();
    const { token, share_id } = await h.shareAndJoin(owner, recipient, 'ops');
    for (const ref of [token, share_id]) {
      for (const [method, path] of [
        ['POST', `/v1/spaces/share/${ref}/rotate`],
        ['DELETE', `/v1/spaces/share/${ref}`],
      ] as const) {
        const res = await engine.request(method, path, { key: recipient.key });
        expect(res.status, `${method} ${path}`).toBe(403);
        expect(errorOf(res).code).toBe('FORBIDDEN');
      }
    }
    for (const ref of ['st_unknown', 'shr_unknown']) {
      expect((await engine.request('POST', `/v1/spaces/share/${ref}/rotate`, { key: owner.key })).status).toBe(404);
      expect((await engine.request('DELETE', `/v1/spaces/share/${ref}`, { key: owner.key })).status).toBe(404);
    }
    const del = await engine.request('DELETE', `/v1/spaces/share/${token}`, { key: owner.key });
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    expect((await engine.request('DELETE', `/v1/spaces/share/${share_id}`, { key: owner.key })).status).toBe(204);
    expect((await engine.request('POST', `/v1/spaces/share/${share_id}/rotate`, { key: owner.key })).status).toBe(404);
    expect((await h.audit(owner.tenantId)).filter((a) => a.operation === 'share.revoked')).toHaveLength(1);
    // A downgraded owner can still revoke.
    const second = (await h.share(owner, { tag: 'more', email: recipient.email })).body;
    await engine.admin('PATCH', `/admin/v1/tenants/${owner.tenantId}`, { tier: 'free' });
    expect((await engine.request('DELETE', `/v1/spaces/share/${second.share_id}`, { key: owner.key })).status).toBe(204);
    expect((await engine.request('POST', `/v1/spaces/share/${second.share_id}/rotate`, { key: owner.key })).status).toBe(403);
  });
});

describe('auth', () => {
  it('the token check is public and needs no key', async () => {
    const res = await engine.request('GET', '/v1/spaces/token/st_anything');
    expect(res.status).toBe(200);
    expect(res.body.error).toBe('not_found');
  });

  it('the OpenAPI document lists the spaces and sharing routes', async () => {
    const doc = await engine.request<{ paths: Record<string, { get: { security: unknown } }> }>('GET', '/openapi.json');
    expect(doc.status).toBe(200);
    for (const p of [
      '/v1/context-spaces',
      '/v1/context-spaces/{space_id}',
      '/v1/context-spaces/{space_id}/memories',
      '/v1/spaces/share',
      '/v1/spaces/shared',
      '/v1/spaces/token/{token}',
      '/v1/spaces/join',
      '/v1/spaces/share/{token}/rotate',
      '/v1/spaces/share/{token}',
    ]) {
      expect(doc.body.paths[p], p).toBeDefined();
    }
    expect(doc.body.paths['/v1/spaces/token/{token}'].get.security).toEqual([]);
  });
});
