import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, errorOf, freshIp, storageName, type TestEngine, type TestResponse, uniqueEmail } from './harness';

/**
 * The 500s the fuzz test found, each pinned: text Postgres cannot store, years it
 * cannot store, an export that answered 200 and then cut its stream, and check-then-insert races.
 * Every one is now a 400 or 409 with the one error body.
 */
let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

function expectValidation(res: TestResponse, field: string) {
  expect(res.status, res.text).toBe(400);
  expect(res.body).toMatchObject({ code: 'VALIDATION_ERROR', status: 400, request_id: expect.any(String) });
  expect(errorOf(res).details?.map((d: { path: string }) => d.path)).toContain(field);
}

describe('text Postgres cannot store', () => {
  it('a NUL in any JSON string is 400 naming the field', async () => {
    const t = await engine.newTenant('pro');
    expectValidation(await engine.request('POST', '/v1/memories', { key: t.key, body: { observation: 'ok', tags: ['fine', 'a\u0000b'] } }), 'tags.1');
    expectValidation(await engine.request('POST', '/v1/keys/revoke', { key: t.key, body: { key_id: '\u0000\u0000' } }), 'key_id');
    expectValidation(await engine.request('POST', '/v1/memories', { key: t.key, body: { observation: 'ok', '\u0000': 1 } }), '\u0000');
    // Nothing was stored.
    expect((await engine.request('GET', '/v1/memories', { key: t.key })).body.total).toBe(0);
  });

  it('a lone UTF-16 surrogate is 400 naming the field', async () => {
    const t = await engine.newTenant('pro');
    expectValidation(
      await engine.request('POST', '/v1/context-spaces', { key: t.key, raw: '{"name":"research \\ud800"}', headers: { 'content-type': 'application/json' } }),
      'name',
    );
    expectValidation(await engine.request('POST', '/v1/memories', { key: t.key, body: { observation: 'x\udfffy' } }), 'observation');
    // A well-formed pair is fine.
    expect((await engine.request('POST', '/v1/context-spaces', { key: t.key, body: { name: 'research 💥' } })).status).toBe(201);
  });

  it('a NUL in a query or path parameter is 400 naming it', async () => {
    const t = await engine.newTenant('pro');
    expectValidation(await engine.request('GET', '/v1/memories/search?q=%00', { key: t.key }), 'q');
    expectValidation(await engine.request('GET', '/v1/replay/timeline?agent_id=%00', { key: t.key }), 'agent_id');
    expectValidation(await engine.admin('GET', '/admin/v1/tenants/a%00b'), 'tenant_id');
  });

  it('an export with a bad filter is a 400 before the stream starts, not a 200 cut short', async () => {
    const t = await engine.newTenant('pro');
    await engine.request('POST', '/v1/memories', { key: t.key, body: { observation: 'one', agent_id: 'a' } });
    const res = await engine.request('GET', '/v1/memories/export?format=csv&agent_id=%00', { key: t.key });
    expectValidation(res, 'agent_id');
    const ok = await engine.request('GET', '/v1/memories/export?format=json&agent_id=a', { key: t.key });
    expect(ok.status).toBe(200);
    expect(ok.body).toHaveLength(1);
  });
});

describe('years Postgres cannot store', () => {
  it('rollback, compensation, audit and replay times outside 0001-9999 are 400', async () => {
    const t = await engine.newTenant('pro');
    for (const target of ['999999 days ago', '0000-01-01T00:00:00Z', '0000-06-01']) {
      expectValidation(await engine.request('POST', '/v1/rollback', { key: t.key, body: { target } }), 'target');
    }
    expectValidation(await engine.request('GET', `/v1/rollback/preview?target=${encodeURIComponent('999999 days ago')}`, { key: t.key }), 'target');
    const window = { rollback_from: new Date().toISOString(), rollback_to: '999999 days ago' };
    expectValidation(await engine.request('POST', '/v1/compensations/preview', { key: t.key, body: window }), 'rollback_to');
    expectValidation(await engine.request('GET', '/v1/audit?since=0000-01-01T00:00:00Z', { key: t.key }), 'since');
    expectValidation(await engine.request('GET', '/v1/audit?until=9999-12-31T23:00:00-05:00', { key: t.key }), 'until');
    expectValidation(await engine.request('GET', '/v1/replay/timeline?since=0000-01-01', { key: t.key }), 'since');
    // The edges of the range are fine.
    expect((await engine.request('GET', '/v1/audit?since=0001-01-01T00:00:00Z&until=9999-12-31T23:59:59Z', { key: t.key })).status).toBe(200);
    expect((await engine.request('POST', '/v1/rollback', { key: t.key, body: { target: '0001-01-01T00:00:00Z' } })).status).toBe(200);
  });
});

describe(`check-then-insert races (${storageName})`, () => {
  it('parallel operator creates with one e-mail: one 201, the rest 409', async () => {
    const email = uniqueEmail('race');
    const answers = await Promise.all(Array.from({ length: 12 }, () => engine.admin('POST', '/admin/v1/tenants', { email, tier: 'free' })));
    const statuses = answers.map((a) => a.status).sort();
    expect(
      statuses.filter((s) => s === 201),
      JSON.stringify(statuses),
    ).toHaveLength(1);
    for (const a of answers.filter((x) => x.status !== 201)) expect(a.body).toMatchObject({ code: 'CONFLICT', status: 409 });
  });

  it('parallel signups with one e-mail never answer 5xx', async () => {
    const email = uniqueEmail('race');
    const answers = await Promise.all(
      Array.from({ length: 12 }, () => engine.request('POST', '/v1/keys', { body: { email }, headers: { 'x-forwarded-for': freshIp() } })),
    );
    for (const a of answers) {
      expect([200, 201, 409], a.text).toContain(a.status);
      if (a.status === 409) expect(a.body).toMatchObject({ code: 'CONFLICT', status: 409 });
    }
  });
});

describe('the closed error contract', () => {
  it('a blocked action answers 403 BLOCKED with the error fields and the whole action, its status "blocked"', async () => {
    const t = await engine.newTenant('pro');
    const text = '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7x\n-----END RSA PRIVATE KEY-----';
    const viaAction = await engine.request('POST', '/v1/actions', { key: t.key, body: { action: 'slack.post_message', params: { text } } });
    const viaConnector = await engine.request('POST', '/v1/actions/slack/post_message', { key: t.key, body: { text } });
    for (const res of [viaAction, viaConnector]) {
      expect(res.status, res.text).toBe(403);
      expect(res.body).toMatchObject({
        code: 'BLOCKED',
        status: 'blocked',
        error: expect.any(String),
        message: expect.any(String),
        request_id: expect.any(String),
        action: 'slack.post_message',
        policy_result: { status: 'blocked' },
      });
      expect(res.body.action_id).toEqual(expect.any(String));
      expect(res.body).not.toHaveProperty('action_status');
    }
  });

  it('a count the tier caps is 403 svc_ram.v1.tier.limit_exceeded with usage; a reused Idempotency-Key is 422', async () => {
    const t = await engine.newTenant('starter');
    const policy = (i: number) => ({ name: `Cap${i}`, rules: [{ match: `never-${i}`, severity: 'low', reason: 'test' }] });
    for (let i = 0; i < 5; i++) expect((await engine.request('POST', '/v1/control/policies', { key: t.key, body: policy(i) })).status).toBe(201);
    const sixth = await engine.request('POST', '/v1/control/policies', { key: t.key, body: policy(5) });
    expect(sixth.status, sixth.text).toBe(403);
    expect(sixth.body).toMatchObject({
      code: 'svc_ram.v1.tier.limit_exceeded',
      status: 403,
      usage: { metric: 'custom_policies', current: 5, limit: 5, plan: 'starter', resets_at: null },
      current_tier: 'starter',
      upgrade_url: expect.any(String),
    });

    const headers = { 'idempotency-key': 'contract-1' };
    expect((await engine.request('POST', '/v1/memories', { key: t.key, body: { observation: 'one' }, headers })).status).toBe(201);
    const reused = await engine.request('POST', '/v1/memories', { key: t.key, body: { observation: 'two' }, headers });
    expect([reused.status, errorOf(reused).code, errorOf(reused).status]).toEqual([422, 'VALIDATION_ERROR', 422]);
  });
});

describe('an id that names nothing is not found, whatever its shape', () => {
  it('approvals, checkpoints, invitations, memories, webhooks', async () => {
    const t = await engine.newTenant('pro');
    const decision = await engine.request('POST', '/v1/approvals/act_doesnotexist/decision', { key: t.key, body: { decision: 'approve' } });
    expect(decision.status, decision.text).toBe(404);
    expect(['NOT_FOUND', 'svc_ram.v1.control.approval_not_found']).toContain(errorOf(decision).code);

    const agent = await engine.request('POST', '/v1/agents', { key: t.key, body: { name: 'Release bot', provider: 'openai', model: 'gpt-4.1' } });
    const mission = await engine.request('POST', '/v1/missions', { key: t.key, body: { agent_id: agent.body.agent_id, goal: 'Ship release 1.4' } });
    expect(mission.status, mission.text).toBe(201);
    const rollback = await engine.request('POST', `/v1/missions/${mission.body.mission_id}/rollback`, { key: t.key, body: { checkpoint_id: 'chk_nope' } });
    expect([rollback.status, errorOf(rollback).code]).toEqual([404, 'NOT_FOUND']);
    const noMission = await engine.request('POST', '/v1/missions/mission-nope/rollback', { key: t.key, body: { checkpoint_id: 'chk_nope' } });
    expect([noMission.status, errorOf(noMission).code]).toEqual([404, 'NOT_FOUND']);

    const join = await engine.request('POST', '/v1/teams/join', { key: t.key, body: { invitation_id: 'inv_nope' } });
    expect([join.status, errorOf(join).code]).toEqual([400, 'INVALID_TOKEN']);

    for (const path of ['/v1/memories/not-a-urn', '/v1/memories/urn:uuid:nope', '/v1/webhooks/hook-nope', `/v1/memories/${'x'.repeat(300)}`]) {
      const res = await engine.request('GET', path, { key: t.key });
      expect([res.status, errorOf(res).code], path).toEqual([404, 'NOT_FOUND']);
      expect(errorOf(res).request_id).toEqual(expect.any(String));
    }
  });
});

describe('bad input as a new user meets it', () => {
  it('an unknown body field is 400 naming it, with the field it was likely meant to be; nothing is stored', async () => {
    const t = await engine.newTenant('pro');
    const res = await engine.request('POST', '/v1/memories', { key: t.key, body: { observation: 'The user prefers EUR', tag: ['billing'] } });
    expectValidation(res, 'tag');
    expect(errorOf(res).details![0].message).toMatch(/did you mean tags\?/);
    expect(errorOf(res).message).toMatch(/^Invalid body: tag:/);
    expect((await engine.request('GET', '/v1/memories', { key: t.key })).body.total).toBe(0);
    // Also on a public route.
    expectValidation(
      await engine.request('POST', '/v1/keys', { body: { email: uniqueEmail(), emial: 'x' }, headers: { 'x-forwarded-for': freshIp() } }),
      'emial',
    );
  });

  it('a schema error on valid JSON says "Invalid body", never "Invalid json"; a 415 says what to send', async () => {
    const t = await engine.newTenant('pro');
    const res = await engine.request('POST', '/v1/memories', { key: t.key, body: { observation: 'x', importance: 11 } });
    expectValidation(res, 'importance');
    expect(errorOf(res).message).toMatch(/^Invalid body: importance:/);
    expect(errorOf(res).message).not.toMatch(/json/i);
    const text = await engine.request('POST', '/v1/memories', { key: t.key, raw: 'observation=x', headers: { 'content-type': 'text/plain' } });
    expect([text.status, errorOf(text).code]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE']);
    expect(errorOf(text).message).toContain('Content-Type: application/json');
  });

  it('the JSON export carries only the documented memory fields', async () => {
    const t = await engine.newTenant('pro');
    expect((await engine.request('POST', '/v1/memories', { key: t.key, body: { observation: 'exported', tags: ['a'] } })).status).toBe(201);
    const res = await engine.request('GET', '/v1/memories/export?format=json', { key: t.key });
    expect(res.status).toBe(200);
    const rows = JSON.parse(res.text) as Record<string, unknown>[];
    expect(rows).toHaveLength(1);
    expect(rows[0]).not.toHaveProperty('cursor');
    expect(rows[0]).toMatchObject({ observation: 'exported', tags: ['a'] });
  });
});
