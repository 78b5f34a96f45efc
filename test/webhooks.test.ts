import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, errorOf, type Tenant, type TestEngine } from './harness';
import { setRecord } from './standins/dns';
import { startReceiver, verifySignature } from './standins/webhook-receiver';
import { tablesHolding } from './tables-holding';

/**
 * Webhooks through HTTP: the address rule at registration and delivery, and deliveries to a real
 * local receiver that checks each signature with the Standard Webhooks algorithm (written from the
 * specification in test/standins/webhook-receiver.ts, not the service's code).
 */
let strict: TestEngine; // the production rule: https only, public addresses only
let local: TestEngine; // WEBHOOKS_ALLOW_INSECURE=1, so it can call the local receiver
let receiver: Awaited<ReturnType<typeof startReceiver>>;
const statusOf = new Map<string, number>();

beforeAll(async () => {
  receiver = await startReceiver({ respond: (path) => statusOf.get(path) ?? 200 });
  [strict, local] = await Promise.all([createEngine(), createEngine({ env: { WEBHOOKS_ALLOW_INSECURE: '1' } })]);
});
afterAll(async () => {
  await Promise.all([strict?.close(), local?.close()]);
  await receiver?.close();
});

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

async function register(engine: TestEngine, t: Tenant, body: Record<string, unknown>) {
  const res = await engine.request('POST', '/v1/webhooks', { key: t.key, body: { events: ['memory.created'], ...body } });
  expect(res.status, res.text).toBe(201);
  return res.body as { webhook_id: string; secret: string };
}

/** Runs every due job (deliveries) to the end. */
const drain = (engine: TestEngine) => engine.node.runner.drain();
const at = (path: string) => receiver.received.filter((r) => r.path === path);
const deliveries = async (engine: TestEngine, t: Tenant, id: string) =>
  (await engine.request('GET', `/v1/webhooks/${id}/deliveries?limit=100`, { key: t.key })).body.deliveries as any[];

describe('registering', () => {
  it('creates a webhook whose secret is shown once, lists it, and records the first_webhook milestone', async () => {
    const t = await strict.newTenant('pro');
    const created = await register(strict, t, {
      url: 'https://hooks.example.com/a',
      events: ['memory.created', 'memory.created', 'rollback.completed'],
      description: 'CRM sync',
    });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(created).toMatchObject({
      active: true,
      format: 'raw',
      events: ['memory.created', 'rollback.completed'],
      description: 'CRM sync',
      failing_since: null,
    });
    const got = await strict.request('GET', `/v1/webhooks/${created.webhook_id}`, { key: t.key });
    expect(got.status).toBe(200);
    expect(got.body).not.toHaveProperty('secret');
    const list = await strict.request('GET', '/v1/webhooks', { key: t.key });
    expect(list.body).toMatchObject({ total_count: 1, webhooks: [{ webhook_id: created.webhook_id }] });
    const milestones = await strict.request('GET', '/v1/milestones', { key: t.key });
    expect(milestones.body.milestones.map((m: { milestone: string }) => m.milestone)).toContain('first_webhook');
    const audit = await strict.request('GET', '/v1/audit?limit=100', { key: t.key });
    const entry = audit.body.entries.find((e: { operation: string }) => e.operation === 'webhook.created')!;
    expect(entry.metadata.url_origin).toBe('https://hooks.example.com');
  });

  it('refuses http, loopback, private, link-local and metadata targets, names that resolve to them, and bad events with 422', async () => {
    const t = await strict.newTenant('pro');
    const refused: [Record<string, unknown>, string][] = [
      [{ url: 'https://hooks.example.com/a', colour: 'blue' }, 'colour'],
      [{ url: 'http://hooks.example.com/a' }, 'url'],
      [{ url: 'https://127.0.0.1/a' }, 'url'],
      [{ url: 'https://[::1]/a' }, 'url'],
      [{ url: 'https://[::ffff:127.0.0.1]/a' }, 'url'],
      [{ url: 'https://0x7f000001/a' }, 'url'],
      [{ url: 'https://10.1.2.3/a' }, 'url'],
      [{ url: 'https://169.254.169.254/latest/meta-data' }, 'url'],
      [{ url: 'https://100.100.100.200/a' }, 'url'],
      [{ url: 'https://localhost/a' }, 'url'],
      [{ url: 'https://private.example.net/a' }, 'url'],
      [{ url: 'https://metadata.example.net/a' }, 'url'],
      [{ url: 'https://split.example.net/a' }, 'url'],
      [{ url: 'https://nowhere.invalid/a' }, 'url'],
      [{ url: 'https://user:pw@hooks.example.com/a' }, 'url'],
      [{ url: 'not a url' }, 'url'],
      [{ url: 'https://hooks.example.com/a', events: [] }, 'events'],
      [{ url: 'https://hooks.example.com/a', events: ['memory.exploded'] }, 'events.0'],
      [{ url: 'https://hooks.example.com/a', description: 'x'.repeat(201) }, 'description'],
      [{ url: 'https://hooks.example.com/a', format: 'teams' }, 'format'],
      [{ events: ['memory.created'] }, 'url'],
    ];
    for (const [body, field] of refused) {
      const res = await strict.request('POST', '/v1/webhooks', { key: t.key, body: { events: ['memory.created'], ...body } });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(errorOf(res)).toMatchObject({ code: 'VALIDATION_ERROR', status: 422 });
      expect(
        errorOf(res).details?.map((d: { path: string }) => d.path),
        JSON.stringify(body),
      ).toContain(field);
    }
    const hook = await register(strict, t, { url: 'https://hooks.example.com/a' });
    const moved = await strict.request('PUT', `/v1/webhooks/${hook.webhook_id}`, { key: t.key, body: { url: 'https://169.254.169.254/' } });
    expect(moved.status).toBe(422);
    expect((await strict.request('PUT', `/v1/webhooks/${hook.webhook_id}`, { key: t.key, body: {} })).status).toBe(422);
    expect((await strict.request('GET', '/v1/webhooks', { key: t.key })).body.total_count).toBe(1);
  });

  it('allows at most 50 webhooks per tenant', async () => {
    const t = await strict.newTenant('pro');
    await Promise.all(Array.from({ length: 50 }, (_, i) => register(strict, t, { url: `https://hooks.example.com/${i}` })));
    const over = await strict.request('POST', '/v1/webhooks', { key: t.key, body: { url: 'https://hooks.example.com/51', events: ['memory.created'] } });
    expect(over.status).toBe(403);
    expect(errorOf(over)).toMatchObject({
      code: 'svc_ram.v1.tier.limit_exceeded',
      usage: { metric: 'webhooks', current: 50, limit: 50, plan: 'pro', resets_at: null },
    });
    expect(errorOf(over).message).toMatch(/50 webhooks/);
  });

  it('is Pro+: a Starter tenant gets 403 FEATURE_NOT_AVAILABLE', async () => {
    const t = await strict.newTenant('starter');
    const res = await strict.request('POST', '/v1/webhooks', { key: t.key, body: { url: 'https://hooks.example.com/a', events: ['memory.created'] } });
    expect(res.status).toBe(403);
    expect(errorOf(res).code).toBe('FEATURE_NOT_AVAILABLE');
  });
});

describe('delivering', { timeout: 60_000 }, () => {
  it('delivers each subscribed event once, signed, as {id, type, created_at, tenant_id, data}, and logs the attempt', async () => {
    const t = await local.newTenant('pro');
    const hook = await register(local, t, { url: receiver.url('/signed') });
    const stored = await local.request('POST', '/v1/memories', { key: t.key, body: { observation: 'The customer prefers e-mail.' } });
    await local.request('DELETE', `/v1/memories/${stored.body.id}`, { key: t.key }); // not subscribed
    await drain(local);
    const got = at('/signed');
    expect(got).toHaveLength(1);
    const [delivery] = got;
    expect(verifySignature(hook.secret, delivery.headers, delivery.body)).toBe(true);
    expect(verifySignature(hook.secret, delivery.headers, delivery.body.replace('e-mail', 'phone'))).toBe(false);
    expect(delivery.headers['webhook-timestamp']).toBe(String(Math.floor(local.clock.now().getTime() / 1000)));
    expect(delivery.json).toMatchObject({
      id: delivery.headers['webhook-id'],
      type: 'memory.created',
      tenant_id: t.tenantId,
      data: { memory: { uuid: stored.body.id, observation: 'The customer prefers e-mail.' } },
    });
    expect(delivery.json.id).toMatch(/^evt_/);
    const log = await deliveries(local, t, hook.webhook_id);
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ event_id: delivery.json.id, event_type: 'memory.created', status_code: 200, success: true, attempt: 1, error: null });
  });

  it('retries a failing receiver with backoff, same webhook-id each time, one delivery row per attempt', async () => {
    const t = await local.newTenant('pro');
    statusOf.set('/flaky', 503);
    const hook = await register(local, t, { url: receiver.url('/flaky') });
    await local.request('POST', '/v1/memories', { key: t.key, body: { observation: 'retry me' } });
    await drain(local);
    expect(at('/flaky')).toHaveLength(1);
    local.clock.advance(10_000);
    await drain(local);
    expect(at('/flaky')).toHaveLength(1); // the first retry waits about 30 s
    local.clock.advance(25_000);
    await drain(local);
    expect(at('/flaky')).toHaveLength(2);
    statusOf.set('/flaky', 200);
    local.clock.advance(2 * 60_000 + 1000);
    await drain(local);
    const got = at('/flaky');
    expect(got).toHaveLength(3);
    expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(1);
    const log = await deliveries(local, t, hook.webhook_id);
    expect(log.map((d) => [d.attempt, d.status_code, d.success])).toEqual([
      [3, 200, true],
      [2, 503, false],
      [1, 503, false],
    ]);
    expect(log[2].error).toMatch(/receiver answered 503/);
    expect((await local.request('GET', `/v1/webhooks/${hook.webhook_id}`, { key: t.key })).body.failing_since).toBeNull();
  });

  it("keeps no text of a receiver's answer: an error page quoting a memory is gone from the log once it is erased", async () => {
    const t = await local.newTenant('enterprise');
    statusOf.set('/quoting', 500);
    const secret = 'Quoted-by-the-receiver: Jane Roe takes drug Y';
    const hook = await register(local, t, { url: receiver.url('/quoting') });
    await local.request('POST', '/v1/memories', { key: t.key, body: { observation: secret, tags: ['quoted'] } });
    await drain(local);
    expect(at('/quoting')[0].body).toContain(secret);
    const [attempt] = await deliveries(local, t, hook.webhook_id);
    expect(attempt).toMatchObject({ status_code: 500, success: false, error: 'receiver answered 500' });
    expect(await tablesHolding(local, secret)).not.toContain('webhook_deliveries');

    const erased = await local.request('POST', '/v1/erasures', { key: t.key, body: { reason: 'GDPR Art. 17 request', tags: ['quoted'] } });
    expect(erased.status, erased.text).toBe(201);
    expect(await tablesHolding(local, secret)).toEqual([]);
    expect(JSON.stringify(await deliveries(local, t, hook.webhook_id))).not.toContain('Jane Roe');
  });

  it('does not follow redirects', async () => {
    const t = await local.newTenant('pro');
    statusOf.set('/moved', 302);
    const hook = await register(local, t, { url: receiver.url('/moved') });
    await local.request('POST', '/v1/memories', { key: t.key, body: { observation: 'redirect me' } });
    await drain(local);
    const [attempt] = await deliveries(local, t, hook.webhook_id);
    expect(attempt).toMatchObject({ status_code: 302, success: false });
    expect(attempt.error).toMatch(/redirect not followed/);
  });

  it('checks the address again at delivery: a name that now resolves to loopback is not called', async () => {
    const t = await strict.newTenant('pro');
    setRecord('flip.example.org', ['93.184.216.34']);
    const hook = await register(strict, t, { url: 'https://flip.example.org/hook' });
    setRecord('flip.example.org', ['127.0.0.1']);
    await strict.request('POST', '/v1/memories', { key: t.key, body: { observation: 'rebinding attempt' } });
    await drain(strict);
    const [attempt] = await deliveries(strict, t, hook.webhook_id);
    expect(attempt).toMatchObject({ status_code: 0, success: false });
    expect(attempt.error).toMatch(/loopback/);
  });

  it('sends slack and discord formats as the text those services accept', async () => {
    const t = await local.newTenant('pro');
    await register(local, t, { url: receiver.url('/slack'), format: 'slack' });
    await register(local, t, { url: receiver.url('/discord'), format: 'discord' });
    await local.request('POST', '/v1/memories', { key: t.key, body: { observation: 'Quarterly report is due Friday.' } });
    await drain(local);
    expect(at('/slack')[0].json).toEqual({ text: 'engram memory.created: "Quarterly report is due Friday."' });
    expect(at('/discord')[0].json).toEqual({ content: 'engram memory.created: "Quarterly report is due Friday."' });
  });

  it('test sends a signed webhook.test; redeliver sends a past event again; both answer 202 with the delivery id', async () => {
    const t = await local.newTenant('pro');
    const hook = await register(local, t, { url: receiver.url('/test-me') });
    const test = await local.request('POST', `/v1/webhooks/${hook.webhook_id}/test`, { key: t.key });
    expect(test.status).toBe(202);
    await drain(local);
    const [first] = at('/test-me');
    expect(first.json).toMatchObject({ type: 'webhook.test', data: { webhook_id: hook.webhook_id }, id: test.body.event_id });
    expect(verifySignature(hook.secret, first.headers, first.body)).toBe(true);
    const again = await local.request('POST', `/v1/webhooks/${hook.webhook_id}/deliveries/${test.body.delivery_id}/redeliver`, { key: t.key });
    expect(again.status).toBe(202);
    expect(again.body.delivery_id).not.toBe(test.body.delivery_id);
    await drain(local);
    expect(at('/test-me')).toHaveLength(2);
    expect(at('/test-me')[1].headers['webhook-id']).toBe(test.body.event_id);
    const log = await deliveries(local, t, hook.webhook_id);
    expect(log.map((d) => d.delivery_id).sort()).toEqual([test.body.delivery_id, again.body.delivery_id].sort());
    const unknown = await local.request('POST', `/v1/webhooks/${hook.webhook_id}/deliveries/del_${'A'.repeat(22)}/redeliver`, { key: t.key });
    expect(unknown.status).toBe(404);
  });

  it('after rotate-secret, deliveries carry both signatures for 24 hours, then only the new one', async () => {
    const t = await local.newTenant('pro');
    const hook = await register(local, t, { url: receiver.url('/rotated') });
    const rotated = await local.request('POST', `/v1/webhooks/${hook.webhook_id}/rotate-secret`, { key: t.key });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(hook.secret);
    await local.request('POST', `/v1/webhooks/${hook.webhook_id}/test`, { key: t.key });
    await drain(local);
    const [during] = at('/rotated');
    expect(verifySignature(hook.secret, during.headers, during.body)).toBe(true);
    expect(verifySignature(rotated.body.secret, during.headers, during.body)).toBe(true);
    local.clock.advance(DAY + 1000);
    await local.request('POST', `/v1/webhooks/${hook.webhook_id}/test`, { key: t.key });
    await drain(local);
    const after = at('/rotated')[1];
    expect(verifySignature(rotated.body.secret, after.headers, after.body)).toBe(true);
    expect(verifySignature(hook.secret, after.headers, after.body)).toBe(false);
  });

  it('a paused or deleted webhook gets no more attempts; test on a paused one is 409', async () => {
    const t = await local.newTenant('pro');
    statusOf.set('/paused', 503);
    statusOf.set('/gone', 503);
    const paused = await register(local, t, { url: receiver.url('/paused') });
    const gone = await register(local, t, { url: receiver.url('/gone') });
    await local.request('POST', '/v1/memories', { key: t.key, body: { observation: 'first attempt fails, the retry waits' } });
    await drain(local);
    expect([at('/paused').length, at('/gone').length]).toEqual([1, 1]);
    expect((await local.request('PUT', `/v1/webhooks/${paused.webhook_id}`, { key: t.key, body: { active: false } })).body.active).toBe(false);
    const deleted = await local.request('DELETE', `/v1/webhooks/${gone.webhook_id}`, { key: t.key });
    expect(deleted.body).toEqual({ success: true, webhook_id: gone.webhook_id });
    statusOf.set('/paused', 200);
    statusOf.set('/gone', 200);
    local.clock.advance(HOUR);
    await drain(local);
    expect([at('/paused').length, at('/gone').length]).toEqual([1, 1]);
    expect((await local.request('POST', `/v1/webhooks/${paused.webhook_id}/test`, { key: t.key })).status).toBe(409);
    expect((await local.request('GET', `/v1/webhooks/${gone.webhook_id}`, { key: t.key })).status).toBe(404);
  });

  it('a webhook failing for 3 days straight is deactivated, with an event, an audit entry and a mail to the owner', async () => {
    const t = await local.newTenant('pro');
    statusOf.set('/down', 500);
    const down = await register(local, t, { url: receiver.url('/down') });
    const watcher = await register(local, t, { url: receiver.url('/watcher'), events: ['webhook.deactivated'] });
    await local.request('POST', '/v1/memories', { key: t.key, body: { observation: 'first failure' } });
    await drain(local);
    const failing = (await local.request('GET', `/v1/webhooks/${down.webhook_id}`, { key: t.key })).body;
    expect(failing).toMatchObject({ active: true, failing_since: local.clock.now().toISOString() });
    local.clock.advance(3 * DAY);
    await local.request('POST', '/v1/memories', { key: t.key, body: { observation: 'still failing three days later' } });
    await drain(local);
    const after = (await local.request('GET', `/v1/webhooks/${down.webhook_id}`, { key: t.key })).body;
    expect(after.active).toBe(false);
    const [notice] = at('/watcher');
    expect(notice.json).toMatchObject({ type: 'webhook.deactivated', data: { webhook_id: down.webhook_id } });
    expect(verifySignature(watcher.secret, notice.headers, notice.body)).toBe(true);
    const mail = await local.admin('GET', `/admin/v1/mail?to=${encodeURIComponent(t.email)}`);
    expect(mail.body.messages.map((m: { subject: string }) => m.subject)).toContain('engram: a webhook was deactivated');
    const audit = await local.request('GET', '/v1/audit?limit=100', { key: t.key });
    expect(audit.body.entries.map((e: { operation: string }) => e.operation)).toContain('webhook.deactivated');
    // Resuming starts a fresh streak.
    const resumed = await local.request('PUT', `/v1/webhooks/${down.webhook_id}`, { key: t.key, body: { active: true } });
    expect(resumed.body).toMatchObject({ active: true, failing_since: null });
  });

  it('delivers anomaly events: 50 deletes in a minute reach an anomaly.bulk_delete subscriber once', async () => {
    const t = await local.newTenant('pro');
    const hook = await register(local, t, { url: receiver.url('/anomalies'), events: ['anomaly.bulk_delete'] });
    const ids: string[] = [];
    for (let i = 0; i < 55; i++)
      ids.push((await local.request('POST', '/v1/memories', { key: t.key, body: { observation: `doomed ${i}`, auto_link: false } })).body.id);
    for (const id of ids) await local.request('DELETE', `/v1/memories/${id}`, { key: t.key });
    await drain(local);
    const got = at('/anomalies');
    expect(got).toHaveLength(1);
    expect(got[0].json).toMatchObject({ type: 'anomaly.bulk_delete', tenant_id: t.tenantId, data: { threshold: 50, count: 50 } });
    expect(verifySignature(hook.secret, got[0].headers, got[0].body)).toBe(true);
  });

  it("never delivers one tenant's events to another tenant's webhook", async () => {
    const [a, b] = [await local.newTenant('pro'), await local.newTenant('pro')];
    await register(local, a, { url: receiver.url('/tenant-a') });
    await register(local, b, { url: receiver.url('/tenant-b') });
    await local.request('POST', '/v1/memories', { key: a.key, body: { observation: 'only for a' } });
    await drain(local);
    expect(at('/tenant-a')).toHaveLength(1);
    expect(at('/tenant-b')).toHaveLength(0);
    const foreign = await local.request(
      'GET',
      `/v1/webhooks/${(await local.request('GET', '/v1/webhooks', { key: a.key })).body.webhooks[0].webhook_id}/deliveries`,
      { key: b.key },
    );
    expect(foreign.status).toBe(404);
  });
});
