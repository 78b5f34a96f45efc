import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, errorOf, freshIp, storageName, type TestEngine, type TestResponse, uniqueEmail } from './harness';

/**
 * The 500s the fuzz test found (issue 9, item 9), each pinned: text Postgres cannot store, years it
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
    expectValidation(await engine.request('POST', '/v1/context-spaces', { key: t.key, raw: '{"name":"research \\ud800"}', headers: { 'content-type': 'application/json' } }), 'name');
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
    expect(statuses.filter((s) => s === 201), JSON.stringify(statuses)).toHaveLength(1);
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
