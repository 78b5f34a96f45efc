import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, embeddedBy, type Tenant, type TestEngine } from './harness';

/**
 * Several instances on one Postgres and Redis (docs/governed-memories.md#when-a-change-takes-effect):
 * a memory policy or control setting changed through one instance, by its verbs or an import, takes
 * effect on another instance's very next store before it embeds, though that instance kept a copy
 * of the tenant's governance: the change replaced the tenant's key epoch, which the store's request
 * was admitted under (shared/control/governance-copies.ts).
 */
let a: TestEngine;
let b: TestEngine;
beforeAll(async () => {
  a = await createEngine();
  b = await createEngine();
});
afterAll(async () => {
  await a.close();
  await b.close();
});

const call = (e: TestEngine, t: Tenant, method: string, path: string, body?: unknown) =>
  e.request(method, path, { key: t.key, body }) as Promise<{ status: number; text: string; body: any }>;

const RULES = [
  { match: 'wire the funds', severity: 'critical', on_violation: 'block', reason: 'Money instructions' },
  { match: 'ask a human', severity: 'high', on_violation: 'require_approval', reason: 'Needs review' },
];
const POLICY = { name: 'Money', step_types: ['memory'], rules: RULES };

/** B stores `observation`; its answer's status, and the texts B embedded for it. */
async function storeOnB(t: Tenant, observation: string) {
  let status = 0;
  const seen = await embeddedBy(b, async () => {
    const res = await call(b, t, 'POST', '/v1/memories', { observation });
    status = res.status;
  });
  return { status, seen };
}

describe('a change through another instance', () => {
  it('blocks or holds the next store on this one without embedding it: policy verbs and settings', async (ctx) => {
    if (!a.node.services.gate) ctx.skip(); // one instance owns an embedded database
    const t = await a.newTenant('pro');
    // B keeps a copy of the tenant's governance: no policy; a store there is judged with it.
    expect((await storeOnB(t, 'warm the copy on b')).status).toBe(201);
    expect((await storeOnB(t, 'the copy is kept')).status).toBe(201);

    expect((await call(a, t, 'POST', '/v1/control/policies', POLICY)).status).toBe(201);
    expect(await storeOnB(t, 'please wire the funds today')).toEqual({ status: 403, seen: [] });
    expect(await storeOnB(t, 'ask a human before deploying')).toEqual({ status: 202, seen: [] });
    // B's copy is warm again (with the policy): a plain store is embedded and stored.
    expect((await storeOnB(t, 'a plain fact')).status).toBe(201);

    // Shadow mode set through A lets the blocked text through on B; enforce again, blocked again.
    expect((await call(a, t, 'PUT', '/v1/control/settings', { evaluation_mode: 'shadow' })).status).toBe(200);
    expect((await storeOnB(t, 'wire the funds, in shadow')).status).toBe(201);
    expect((await call(a, t, 'PUT', '/v1/control/settings', { evaluation_mode: 'enforcement' })).status).toBe(200);
    expect(await storeOnB(t, 'wire the funds, enforced')).toEqual({ status: 403, seen: [] });

    // Disabled through A: B stores what it blocked; enabled again (replaced), B blocks before embedding.
    expect((await call(a, t, 'DELETE', '/v1/control/policies/Money')).status).toBe(200);
    expect((await storeOnB(t, 'wire the funds once more')).status).toBe(201);
    expect((await call(a, t, 'PUT', '/v1/control/policies/Money', POLICY)).status).toBeLessThan(300);
    expect(await storeOnB(t, 'wire the funds yet again')).toEqual({ status: 403, seen: [] });
  });

  it('a policy restored by an import through another instance blocks the next store before it embeds', async (ctx) => {
    if (!a.node.services.gate) ctx.skip();
    const source = await a.newTenant('enterprise');
    expect((await call(a, source, 'POST', '/v1/control/policies', POLICY)).status).toBe(201);
    const bundle = await a.request('GET', '/v1/export/bundle', { key: source.key });
    expect(bundle.status, bundle.text).toBe(200);

    const t = await a.newTenant('enterprise');
    expect((await storeOnB(t, 'warm the copy on b')).status).toBe(201);
    const res = await a.request('POST', '/v1/import?format=bundle&dry_run=false', {
      key: t.key,
      raw: bundle.text,
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(res.status, res.text).toBe(200);
    expect((res.body as { stored: { policy: number } }).stored.policy).toBe(1);
    expect(await storeOnB(t, 'please wire the funds today')).toEqual({ status: 403, seen: [] });
  });
});
