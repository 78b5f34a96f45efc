import { readFileSync } from 'node:fs';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleRoutes, SIGN_INS_PER_IP } from '../functions/console';
import { SCRIPT_FILE, scriptModule, VENDOR_FILE, vendorModule } from './console-assets';
import { assetUrls } from '../functions/console/assets';
import { PAYLOADS } from './actions-helpers';
import { type ConsoleVisitor, csrfIn, signIn } from './console-session';
import { createEngine, freshIp, type Tenant, type TestEngine } from './harness';

let engine: TestEngine;
let owner: Tenant;
let other: Tenant;
let visitor: ConsoleVisitor;
const fetchApp = (req: Request) => engine.app.request(req);

beforeAll(async () => {
  engine = await createEngine();
  [owner, other] = [await engine.newTenant('pro'), await engine.newTenant('pro')];
  visitor = await signIn(fetchApp, owner.key);
});
afterAll(() => engine.close());

/** Submits as the tenant's agent (a key with actions:write): the key that submits an action never decides it. */
const submit = async (t: Tenant, body: Record<string, unknown> = PAYLOADS.pending) => {
  const agent = await engine.request('POST', '/v1/keys/restricted', { key: t.key, body: { name: 'agent', scopes: ['actions:write'] } });
  expect(agent.status, agent.text).toBe(201);
  const res = await engine.request('POST', '/v1/actions', { key: agent.body.api_key, body });
  expect(res.body.status).toBe('pending_review');
  return res.body.action_id as string;
};

const sessionPaths = consoleRoutes.filter((r) => r.session).map((r) => ({ ...r, url: r.path.replace(/:(\w+)/g, 'x') }));

describe('console sessions', () => {
  it.each(sessionPaths)('$method $path without a session is a redirect to sign-in', async (route) => {
    const res = await engine.app.request(route.url, { method: route.method, redirect: 'manual' });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/console/sign-in');
  });

  it('htmx without a session is sent to sign-in by its own redirect header', async () => {
    const res = await engine.app.request('/console/approvals', { headers: { 'hx-request': 'true' } });
    expect(res.headers.get('hx-redirect')).toBe('/console/sign-in');
  });

  it('the cookie is HttpOnly, SameSite=Strict, Path=/console, and Secure except on loopback http', async () => {
    const form = () => ({
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': freshIp() },
      body: `api_key=${owner.key}`,
    });
    const loopback = (await engine.app.request('http://127.0.0.1/console/sign-in', form())).headers.get('set-cookie')!;
    expect(loopback).toMatch(/^engram_console=[0-9A-Za-z]{43}; Max-Age=43200; Path=\/console; HttpOnly; SameSite=Strict$/);
    const https = (await engine.app.request('https://engram.example/console/sign-in', form())).headers.get('set-cookie')!;
    expect(https).toContain('; Secure');
    expect(https).not.toContain(owner.key);
  });

  it('stores only the hash of the session id, and never the key', async () => {
    const id = visitor.cookie.split('=')[1];
    const rows = await engine.sql<Record<string, unknown>>(sql`SELECT * FROM console_sessions WHERE tenant_id = ${owner.tenantId}`);
    expect(rows.length).toBeGreaterThan(0);
    const text = JSON.stringify(rows);
    expect(text).not.toContain(id);
    expect(text).not.toContain(owner.key);
  });

  it('pages carry the CSP, no framing, and are not cached; assets are cached for a year', async () => {
    const res = await visitor.get('/console/approvals');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(res.headers.get('content-security-policy')).toContain("object-src 'none'");
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('referrer-policy')).toBe('same-origin');
    expect(res.headers.get('cross-origin-opener-policy')).toBe('same-origin');
    expect(res.headers.get('strict-transport-security')).toBeNull();
    expect(res.headers.get('cache-control')).toBe('no-store');
    const html = await res.text();
    expect(html).not.toMatch(/<script>|<style>| style=| on\w+=/);
    for (const url of Object.values(assetUrls)) {
      const asset = await engine.app.request(url);
      expect(asset.status, url).toBe(200);
      expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    }
  });

  it('vendor.ts is what the generator writes from the installed htmx packages (npm run console:assets)', () => {
    expect(readFileSync(VENDOR_FILE, 'utf8')).toBe(vendorModule());
  });

  it('console-script.ts is browser.ts bundled with the SDK verifier as it is now (npm run console:assets)', () => {
    expect(readFileSync(SCRIPT_FILE, 'utf8')).toBe(scriptModule());
  });

  it('a wrong key is refused on the sign-in page; a restricted key may not sign in', async () => {
    const form = (key: string) => ({
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': freshIp() },
      body: `api_key=${key}`,
    });
    const wrong = await engine.app.request('/console/sign-in', form(`sk_${'A'.repeat(43)}`));
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();
    const minted = await engine.request('POST', '/v1/keys/restricted', { key: owner.key, body: { name: 'ro', scopes: ['memories:read'] } });
    expect(minted.status, minted.text).toBe(201);
    const restricted = await engine.app.request('/console/sign-in', form(minted.body.api_key));
    expect(restricted.status).toBe(403);
  });

  it('sign-in refuses a cross-site form post; same-origin and non-browser posts are taken', async () => {
    const form = (headers: Record<string, string>) => ({
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': freshIp(), ...headers },
      body: `api_key=${owner.key}`,
    });
    const signInAt = (headers: Record<string, string>) => engine.app.request('https://engram.example/console/sign-in', form(headers));
    const refusedHeaders: Record<string, string>[] = [
      { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site' },
      { origin: 'https://evil.example' },
      { origin: 'null' },
    ];
    for (const headers of refusedHeaders) {
      const refused = await signInAt(headers);
      expect(refused.status, JSON.stringify(headers)).toBe(403);
      expect(refused.headers.get('set-cookie'), JSON.stringify(headers)).toBeNull();
    }
    const takenHeaders: Record<string, string>[] = [
      { origin: 'https://engram.example', 'sec-fetch-site': 'same-origin' },
      { origin: 'https://engram.example' },
      {},
    ];
    for (const headers of takenHeaders) {
      const taken = await signInAt(headers);
      expect(taken.status, JSON.stringify(headers)).toBe(303);
      expect(taken.headers.get('set-cookie')).toMatch(/^engram_console=/);
    }
  });

  it('a form post without the CSRF token is refused, and one with it is taken', async () => {
    const id = await submit(owner, PAYLOADS.pendingPlain);
    engine.clock.advance(6_000);
    const without = await visitor.post(`/console/approvals/${id}/decision`, { decision: 'deny' });
    expect(without.status).toBe(403);
    const wrong = await visitor.post('/console/sign-out', { _csrf: 'x'.repeat(43) });
    expect(wrong.status).toBe(403);
    expect((await visitor.get('/console/approvals')).status).toBe(200);
    const taken = await visitor.post(`/console/approvals/${id}/decision`, { _csrf: visitor.csrf, decision: 'deny', reason: 'no' });
    expect(taken.status).toBe(303);
    expect((await engine.request('GET', `/v1/actions/${id}`, { key: owner.key })).body.status).toBe('denied');
  });

  it('decisions go through the API verb: too early and a missing phrase are refused and shown', async () => {
    const id = await submit(owner);
    const early = await visitor.post(`/console/approvals/${id}/decision`, { _csrf: visitor.csrf, decision: 'approve' }, { 'hx-request': 'true' });
    expect(await early.text()).toMatch(/Refused: Solo mode: a decision is taken 5 seconds after submission/);
    engine.clock.advance(6_000);
    const unconfirmed = await visitor.post(`/console/approvals/${id}/decision`, { _csrf: visitor.csrf, decision: 'approve' });
    expect(unconfirmed.status).toBe(400);
    expect(await unconfirmed.text()).toContain('ROLLBACK');
    const approved = await visitor.post(
      `/console/approvals/${id}/decision`,
      { _csrf: visitor.csrf, decision: 'approve', confirmation: 'ROLLBACK' },
      { 'hx-request': 'true' },
    );
    expect(await approved.text()).toContain('<p class="notice ok" role="status">Approved <code>http.post</code>: the agent may run it now.');
  });

  it("another tenant's approval is not found, as one that does not exist", async () => {
    const id = await submit(owner);
    engine.clock.advance(6_000);
    const theirs = await signIn(fetchApp, other.key);
    const foreign = await theirs.post(`/console/approvals/${id}/decision`, { _csrf: theirs.csrf, decision: 'deny' });
    const missing = await theirs.post('/console/approvals/act_0000000000000000000000/decision', { _csrf: theirs.csrf, decision: 'deny' });
    expect(foreign.status).toBe(404);
    expect(missing.status).toBe(404);
    const inbox = await (await theirs.get('/console/approvals')).text();
    expect(inbox).not.toContain(id);
  });

  it("a team member reviews and approves a teammate's action from the Team reviews tab", async () => {
    const [lead, member] = [await engine.newTenant('pro'), await engine.newTenant('pro')];
    const team = await engine.request('POST', '/v1/teams', { key: lead.key, body: { name: 'Reviewers' } });
    const invited = await engine.request('POST', `/v1/teams/${team.body.team_id}/invite`, { key: lead.key, body: { email: member.email } });
    expect((await engine.request('POST', '/v1/teams/join', { key: member.key, body: { invitation_id: invited.body.invitation_id } })).status).toBe(200);
    expect((await engine.request('PUT', '/v1/control/settings', { key: lead.key, body: { approval_mode: 'team' } })).status).toBe(200);
    const id = await submit(lead);
    const reviewer = await signIn(fetchApp, member.key);
    const tab = await (await reviewer.get('/console/approvals?status=team')).text();
    expect(tab).toContain(`card-${id}`);
    expect(tab).toContain('1 waiting for your review');
    const approved = await reviewer.post(
      `/console/approvals/${id}/decision`,
      { _csrf: reviewer.csrf, decision: 'approve', confirmation: 'ROLLBACK', tab: 'team' },
      { 'hx-request': 'true' },
    );
    const answer = await approved.text();
    expect(answer).toContain('Approved <code>http.post</code>: the agent may run it now.');
    // The card leaves the tab: its count, swapped in out of band, no longer counts it.
    expect(answer).toMatch(/id="inbox-count"[^>]*hx-swap-oob="true"[^>]*>0 waiting for your review/);
    // Its own tab shows nothing of the teammate's.
    expect(await (await reviewer.get('/console/approvals?status=approved')).text()).not.toContain(id);
  });

  it('the audit page lists the trail and verifies the chain', async () => {
    const page = await (await visitor.get('/console/audit')).text();
    expect(page).toContain('action.approved');
    const verified = await visitor.post('/console/audit/verify', { _csrf: visitor.csrf });
    expect(await verified.text()).toContain('Chain intact');
    const exported = await visitor.get('/console/audit/export');
    expect(exported.status).toBe(200);
    expect(exported.headers.get('content-type')).toContain('text/csv');
  });

  it('a rollback is previewed, refused without the phrase, and run with it', async () => {
    const kept = await engine.request('POST', '/v1/memories', { key: owner.key, body: { observation: 'The user prefers invoices in EUR.' } });
    engine.clock.advance(1_000);
    const target = engine.clock.now().toISOString();
    engine.clock.advance(1_000);
    const wrong = await engine.request('POST', '/v1/memories', { key: owner.key, body: { observation: 'The user prefers invoices in USD.' } });
    const preview = await (await visitor.get(`/console/rollback/preview?target=${encodeURIComponent(target)}`)).text();
    expect(preview).toContain('1 memories created after it');
    const unconfirmed = await visitor.post('/console/rollback', { _csrf: visitor.csrf, target, confirmation: 'rollback' });
    expect(unconfirmed.status).toBe(400);
    expect((await engine.request('GET', `/v1/memories/${wrong.body.uuid}`, { key: owner.key })).status).toBe(200);
    const done = await visitor.post('/console/rollback', { _csrf: visitor.csrf, target, confirmation: 'ROLLBACK' });
    expect(await done.text()).toContain('1 removed');
    expect((await engine.request('GET', `/v1/memories/${wrong.body.uuid}`, { key: owner.key })).status).toBe(404);
    expect((await engine.request('GET', `/v1/memories/${kept.body.uuid}`, { key: owner.key })).status).toBe(200);
  });

  it('sign-out ends the session', async () => {
    const mine = await signIn(fetchApp, owner.key);
    const out = await mine.post('/console/sign-out', { _csrf: mine.csrf });
    expect(out.status).toBe(303);
    expect(out.headers.get('set-cookie')).toContain('Max-Age=0');
    expect((await mine.get('/console/approvals')).headers.get('location')).toBe('/console/sign-in');
  });

  it('a revoked key ends its sessions at once', async () => {
    const doomed = await engine.newTenant('pro');
    const mine = await signIn(fetchApp, doomed.key);
    expect((await mine.get('/console/approvals')).status).toBe(200);
    expect((await engine.request('POST', '/v1/keys/revoke', { key: doomed.key, body: { key_id: doomed.keyId } })).status).toBe(200);
    const after = await mine.get('/console/approvals');
    expect(after.status).toBe(303);
    expect(after.headers.get('location')).toBe('/console/sign-in?ended=key');
    expect(await engine.sql(sql`SELECT 1 FROM console_sessions WHERE tenant_id = ${doomed.tenantId}`)).toEqual([]);
  });

  it('a session lasts 12 hours', async () => {
    const mine = await signIn(fetchApp, owner.key);
    engine.clock.advance(12 * 3_600_000 + 1_000);
    expect((await mine.get('/console/approvals')).headers.get('location')).toBe('/console/sign-in');
    visitor = await signIn(fetchApp, owner.key);
    expect(csrfIn(await (await visitor.get('/console/approvals')).text())).toBe(visitor.csrf);
  });

  it('the overview shows the quotas and the service health', async () => {
    const page = await (await visitor.get('/console/overview')).text();
    expect(page).toContain('API calls this month');
    expect(page).toMatch(/Service health <span class="badge (ok|bad)">(healthy|degraded)/);
  });

  it("memories: search in every mode, a memory's page, and forgetting it", async () => {
    const stored = await engine.request('POST', '/v1/memories', {
      key: owner.key,
      body: { observation: 'The staging database is called pg-staging-2.', tags: ['infra'] },
    });
    expect(stored.status).toBe(201);
    const id = (stored.body.uuid as string).replace('urn:uuid:', '');
    for (const mode of ['semantic', 'keyword', 'hybrid']) {
      const page = await (await visitor.get(`/console/memories?q=staging+database&mode=${mode}`)).text();
      expect(page, mode).toContain(`/console/memories/${id}`);
    }
    expect(await (await visitor.get(`/console/memories/${id}`)).text()).toContain('pg-staging-2');
    const forgotten = await visitor.post(`/console/memories/${id}/forget`, { _csrf: visitor.csrf });
    expect(forgotten.headers.get('location')).toBe('/console/memories?forgotten=1');
    expect((await engine.request('GET', `/v1/memories/${id}`, { key: owner.key })).status).toBe(404);
    expect((await visitor.get(`/console/memories/${id}`)).status).toBe(404);
  });

  it('/ links to the console', async () => {
    expect((await engine.request('GET', '/')).body).toMatchObject({ console: '/console' });
  });

  it(`sign-in attempts are limited to ${SIGN_INS_PER_IP} an hour per client address`, async () => {
    const ip = freshIp();
    const attempt = () =>
      engine.app.request('/console/sign-in', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': ip },
        body: `api_key=sk_${'B'.repeat(43)}`,
      });
    const statuses: number[] = [];
    for (let i = 0; i <= SIGN_INS_PER_IP; i++) statuses.push((await attempt()).status);
    expect(statuses.slice(0, -1).every((s) => s === 401)).toBe(true);
    expect(statuses.at(-1)).toBe(429);
  });
});
