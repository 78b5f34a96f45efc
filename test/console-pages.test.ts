import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paramsOf } from '../functions/console/policy-pages';
import { decisionOf } from '../functions/console/views/actions';
import { PAYLOADS } from './actions-helpers';
import { type ConsoleVisitor, signIn } from './console-session';
import { createEngine, type Tenant, type TestEngine } from './harness';
import { SseReader } from './sse';

/** The console's views on actions, policies, replay, webhooks and a memory's history; its live inbox and sign-out. */
let engine: TestEngine;
let owner: Tenant;
let visitor: ConsoleVisitor;
const fetchApp = (req: Request) => engine.app.request(req);

beforeAll(async () => {
  // A short heartbeat: a stream checks its session that often.
  engine = await createEngine({ env: { EVENT_STREAM_HEARTBEAT_MS: '100' } });
  owner = await engine.newTenant('pro');
  visitor = await signIn(fetchApp, owner.key);
});
afterAll(() => engine.close());

const text = async (res: Response | Promise<Response>) => (await res).text();
const bare = (urn: string) => urn.replace('urn:uuid:', '');

describe('console pages on the families’ verbs', () => {
  it('actions: the list shows each submitted action, and its page the explanation', async () => {
    const held = await engine.request('POST', '/v1/actions', { key: owner.key, body: PAYLOADS.pending });
    const allowed = await engine.request('POST', '/v1/actions', { key: owner.key, body: { ...PAYLOADS.allowed, agent_id: 'standup-bot' } });
    const list = await text(visitor.get('/console/actions'));
    expect(list).toContain(`/console/actions/${held.body.action_id}`);
    expect(list).toContain('standup-bot');
    expect(list).toContain('waiting');
    const page = await text(visitor.get(`/console/actions/${held.body.action_id}`));
    expect(page).toContain('Why it ended this way');
    expect(page).toMatch(/held it for review/);
    expect(page).toContain('action.pending_review');
    expect(await text(visitor.get(`/console/actions/${allowed.body.action_id}`))).toContain('so it was allowed');
    expect((await visitor.get('/console/actions/act_nope')).status).toBe(404);
  });

  it('policies: the list and a dry run that shows the decision without recording an action', async () => {
    const page = await text(visitor.get('/console/policies'));
    expect(page).toContain('FinancialSafety');
    const before = (await engine.request('GET', '/v1/approvals', { key: owner.key })).body.total;
    expect(before).toBeTypeOf('number');
    const held = await visitor.post('/console/policies/dry-run', {
      _csrf: visitor.csrf,
      action: PAYLOADS.pending.action,
      params: JSON.stringify(PAYLOADS.pending.params),
    });
    expect(held.status).toBe(200);
    expect(await held.text()).toContain('Held for review');
    const allowed = await text(visitor.post('/console/policies/dry-run', { _csrf: visitor.csrf, action: 'slack.post_message', params: '{"text":"hi"}' }));
    expect(allowed).toContain('Allowed: no policy would stop it.');
    const bad = await visitor.post('/console/policies/dry-run', { _csrf: visitor.csrf, action: 'db.query', params: '{nope' });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('params: is not valid JSON');
    expect((await engine.request('GET', '/v1/approvals', { key: owner.key })).body.total).toBe(before);
    expect((await visitor.post('/console/policies/dry-run', { action: 'db.query' })).status).toBe(403);
  });

  it("replay: a diff between two times shows what changed; a memory's page its versions and links", async () => {
    const stored = await engine.request('POST', '/v1/memories', { key: owner.key, body: { observation: 'Invoices are sent in EUR.' } });
    engine.clock.advance(60_000);
    const from = engine.clock.now().toISOString();
    engine.clock.advance(60_000);
    const id = bare(stored.body.uuid as string);
    expect((await engine.request('PATCH', `/v1/memories/${id}`, { key: owner.key, body: { observation: 'Invoices are sent in CHF.' } })).status).toBe(200);
    await engine.request('POST', '/v1/memories', { key: owner.key, body: { observation: 'The VAT number is CHE-123.' } });
    engine.clock.advance(60_000);
    const to = engine.clock.now().toISOString();
    const diff = await text(visitor.get(`/console/replay?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`));
    expect(diff).toContain('1 added · 0 removed · 1 modified');
    expect(diff).toContain('CHE-123');
    expect(diff).toContain('changed: observation');
    const reversed = await visitor.get(`/console/replay?from=${encodeURIComponent(to)}&to=${encodeURIComponent(from)}`);
    expect(reversed.status).toBe(422);
    expect((await visitor.get('/console/replay?from=yesterday&to=now')).status).toBe(400);
    expect(await text(visitor.get('/console/replay'))).toContain('Compare');

    const page = await text(visitor.get(`/console/memories/${id}`));
    expect(page).toContain('Versions');
    expect(page).toContain('Invoices are sent in EUR.');
    expect(page).toContain('Invoices are sent in CHF.');
    expect(page).toContain('Links');
  });

  it('webhooks: the list, an endpoint with its deliveries, a test ping and a redelivery', async () => {
    const hook = await engine.request('POST', '/v1/webhooks', {
      key: owner.key,
      body: { url: 'https://hooks.example.com/console', events: ['memory.created'] },
    });
    expect(hook.status).toBe(201);
    const webhookId = hook.body.webhook_id as string;
    expect(await text(visitor.get('/console/webhooks'))).toContain(`/console/webhooks/${webhookId}`);
    const sent = await visitor.post(`/console/webhooks/${webhookId}/test`, { _csrf: visitor.csrf });
    expect(sent.status).toBe(303);
    expect(sent.headers.get('location')).toBe(`/console/webhooks/${webhookId}?sent=test`);
    expect(await text(visitor.get(`/console/webhooks/${webhookId}?sent=test`))).toContain('Test ping queued');
    expect((await visitor.post(`/console/webhooks/${webhookId}/deliveries/dlv_nope/redeliver`, { _csrf: visitor.csrf })).status).toBe(404);
    await engine.request('PUT', `/v1/webhooks/${webhookId}`, { key: owner.key, body: { active: false } });
    const refused = await visitor.post(`/console/webhooks/${webhookId}/test`, { _csrf: visitor.csrf });
    expect(refused.status).toBe(409);
    expect(await refused.text()).toContain('is inactive');
  });

  it('the navigation links every page', async () => {
    const page = await text(visitor.get('/console/overview'));
    for (const path of ['approvals', 'actions', 'policies', 'audit', 'rollback', 'replay', 'memories', 'webhooks', 'traces', 'overview'])
      expect(page, path).toContain(`href="/console/${path}"`);
  });
});

describe('the live inbox', () => {
  const open = async (v: ConsoleVisitor) => {
    const res = await v.get('/console/approvals/stream');
    expect(res.status).toBe(200);
    return new SseReader(res.body!);
  };

  it('sends each new pending card with the pending count, swapped out of band', async () => {
    const mine = await signIn(fetchApp, owner.key);
    const stream = await open(mine);
    const pending = (await engine.request('GET', '/v1/approvals?status=pending_review', { key: owner.key })).body.total as number;
    const held = await engine.request('POST', '/v1/actions', { key: owner.key, body: PAYLOADS.pending });
    const [message] = await stream.events(1);
    expect(message.event).toBe('pending');
    expect(message.data).toContain(`card-${held.body.action_id}`);
    expect(message.data).toMatch(new RegExp(`id="inbox-count"[^>]*hx-swap-oob="true"[^>]*>${pending + 1} pending review`));
    await mine.post('/console/sign-out', { _csrf: mine.csrf });
  });

  it('ends when its session is signed out', async () => {
    const mine = await signIn(fetchApp, owner.key);
    const stream = await open(mine);
    expect((await mine.post('/console/sign-out', { _csrf: mine.csrf })).status).toBe(303);
    while (await stream.next({ comments: true, timeoutMs: 2_000 }));
    expect(stream.ended).toBe(true);
  });

  it('ends when its session is gone by any other way (checked as it runs)', async () => {
    const mine = await signIn(fetchApp, owner.key);
    const stream = await open(mine);
    engine.clock.advance(12 * 3_600_000 + 1_000);
    while (await stream.next({ comments: true, timeoutMs: 2_000 }));
    expect(stream.ended).toBe(true);
    visitor = await signIn(fetchApp, owner.key);
  });
});

describe('view helpers', () => {
  it('paramsOf takes a JSON object or nothing', () => {
    expect(paramsOf('')).toEqual({});
    expect(paramsOf('{"a":1}')).toEqual({ a: 1 });
    expect(() => paramsOf('[1]')).toThrow('must be a JSON object');
    expect(() => paramsOf('null')).toThrow('must be a JSON object');
    expect(() => paramsOf('{')).toThrow('not valid JSON');
  });

  it('decisionOf tells what a person decided', () => {
    expect(decisionOf({ outcome: 'allowed', status: 'executed', decided_at: null })).toBe('—');
    expect(decisionOf({ outcome: 'pending_review', status: 'pending_review', decided_at: null })).toBe('waiting');
    expect(decisionOf({ outcome: 'pending_review', status: 'executed', decided_at: 'x' })).toBe('approved');
    expect(decisionOf({ outcome: 'pending_review', status: 'denied', decided_at: 'x' })).toBe('denied');
  });
});
