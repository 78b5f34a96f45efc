import { constants, createHash, createPublicKey, verify } from 'node:crypto';
import canonicalize from 'canonicalize';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configuredSigningKey, generateSigningKeyPem } from '../shared/platform/contract/trace-signing';
import { createEngine, errorOf, type Tenant, type TestEngine } from './harness';

let engine: TestEngine;
let pro: Tenant;
beforeAll(async () => {
  engine = await createEngine();
  pro = await engine.newTenant('pro');
});
afterAll(() => engine.close());

const post = <T = never, P extends string = string>(t: Tenant, path: P, body?: unknown) =>
  engine.request<T, 'POST', P>('POST', path, { key: t.key, body: body ?? {} });
const get = <T = never, P extends string = string>(t: Tenant, path: P) => engine.request<T, 'GET', P>('GET', path, { key: t.key });
const exec = (query: ReturnType<typeof sql>) => engine.node.services.db.execute(query);

async function start(t: Tenant, body: Record<string, unknown> = { agent_id: 'planner' }) {
  const res = await post(t, '/v1/traces', body);
  expect(res.status, res.text).toBe(201);
  return res.body.trace_id as string;
}
async function step(t: Tenant, traceId: string, body: Record<string, unknown>) {
  const res = await post(t, `/v1/traces/${traceId}/steps`, body);
  expect(res.status, res.text).toBe(201);
  return res.body;
}
async function sealedTrace(t: Tenant, steps: Record<string, unknown>[]) {
  const traceId = await start(t);
  for (const s of steps) await step(t, traceId, s);
  const done = await post(t, `/v1/traces/${traceId}/complete`);
  expect(done.status, done.text).toBe(200);
  return { traceId, seal: done.body };
}
const verifyOf = async (t: Tenant, traceId: string) => {
  const res = await post(t, `/v1/traces/${traceId}/verify`);
  expect(res.status, res.text).toBe(200);
  return res.body;
};
const problems = (v: { discrepancies: { problem: string; step_index: number | null }[] | null }) =>
  (v.discrepancies ?? []).map((d) => `${d.step_index}:${d.problem}`);

// docs/architecture.md#trace-hashing, recomputed here with node:crypto and the canonicalize package, not the service's code.
const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
const integrity = (traceId: string, index: number, s: { type: string; content: string; metadata?: object; created_at: string }) =>
  sha256(canonicalize({ trace_id: traceId, step_index: index, type: s.type, content: s.content, metadata: s.metadata ?? {}, created_at: s.created_at })!);
const pssVerify = (pem: string, root: string, signature: string) =>
  verify(
    'sha256',
    Buffer.from(root, 'utf8'),
    { key: createPublicKey(pem), padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 },
    Buffer.from(signature, 'base64'),
  );

const STEPS = [
  { type: 'THOUGHT', content: 'The customer asked for a refund of order 42.' },
  { type: 'ACTION', content: 'POST /v1/refunds {"order": 42}', metadata: { tool: 'stripe', amount: 12.5, nested: { z: 1, a: [true, null, 'é'] } } },
  { type: 'OBSERVATION', content: 'refund re_1 created' },
  { type: 'OUTPUT', content: 'Refunded 12.50 EUR.' },
];

describe('a trace from start to a verified seal', () => {
  it('chains each step as documented, signs the root, verifies, and certifies with the public key', async () => {
    const traceId = await start(pro, { agent_id: 'refund-agent', description: 'Refund order 42', tags: ['refunds', 'refunds'] });
    expect(traceId).toMatch(/^trc_/);
    let previous: string | null = null;
    for (const [index, s] of STEPS.entries()) {
      const added = await step(pro, traceId, s);
      expect(added.step_index).toBe(index);
      expect(added.type).toBe(s.type);
      expect(added.was_interrupted).toBe(false);
      expect(added.trace_status).toBe('active');
      expect(added.integrity_hash).toBe(integrity(traceId, index, { ...s, created_at: added.created_at }));
      expect(added.previous_chain_hash).toBe(previous);
      expect(added.integrity_chain_hash).toBe(sha256((previous ?? '') + added.integrity_hash));
      previous = added.integrity_chain_hash;
    }

    const done = await post(pro, `/v1/traces/${traceId}/complete`);
    expect(done.status, done.text).toBe(200);
    expect(done.body).toMatchObject({
      trace_id: traceId,
      status: 'completed',
      integrity_root_hash: previous,
      signature_algorithm: 'RSA-PSS-SHA256',
      step_count: 4,
    });
    expect(done.body.signed_at).toBe(engine.clock.now().toISOString());

    const key = await get(pro, '/v1/traces/public-key');
    expect(key.status).toBe(200);
    expect(key.body.algorithm).toBe('RSA-PSS-SHA256');
    expect(createPublicKey(key.body.public_key).asymmetricKeyDetails?.modulusLength).toBe(4096);
    expect(key.body.key_id).toBe(
      createHash('sha256')
        .update(createPublicKey(key.body.public_key).export({ type: 'spki', format: 'der' }))
        .digest('hex'),
    );
    expect(done.body.key_id).toBe(key.body.key_id);
    expect(pssVerify(key.body.public_key, done.body.integrity_root_hash, done.body.signature)).toBe(true);
    expect(pssVerify(key.body.public_key, sha256('another root'), done.body.signature)).toBe(false);

    expect(await verifyOf(pro, traceId)).toMatchObject({ valid: true, chain_valid: true, signature_valid: true, discrepancies: null, step_count: 4 });

    const cert = await get(pro, `/v1/traces/${traceId}/certificate`);
    expect(cert.status).toBe(200);
    expect(cert.body).toMatchObject({
      trace_id: traceId,
      agent_id: 'refund-agent',
      status: 'completed',
      integrity_root_hash: previous,
      signature: done.body.signature,
      public_key: key.body.public_key,
      key_id: key.body.key_id,
    });
    expect(cert.body.steps.map((s: { step_index: number }) => s.step_index)).toEqual([0, 1, 2, 3]);
    expect(cert.body.steps.reduce((chain: string, s: { integrity_hash: string }) => sha256(chain + s.integrity_hash), '')).toBe(previous);

    const got = await get(pro, `/v1/traces/${traceId}`);
    expect(got.status).toBe(200);
    expect(got.body.trace).toMatchObject({
      trace_id: traceId,
      agent_id: 'refund-agent',
      status: 'completed',
      description: 'Refund order 42',
      tags: ['refunds'],
      step_count: 4,
    });
    expect(got.body.steps.map((s: { content: string }) => s.content)).toEqual(STEPS.map((s) => s.content));
    expect(got.body.steps[1].metadata).toEqual(STEPS[1].metadata);
    expect(got.body.steps[0]).toMatchObject({ previous_chain_hash: null, was_interrupted: false, metadata: {} });
    expect(got.body).toMatchObject({ step_count: 4, has_more_steps: false });
    const page = await get(pro, `/v1/traces/${traceId}?steps_offset=1&steps_limit=2`);
    expect(page.body.steps.map((s: { step_index: number }) => s.step_index)).toEqual([1, 2]);
    expect(page.body.has_more_steps).toBe(true);

    const audit = await get(pro, '/v1/audit?limit=1000');
    const ofTrace = audit.body.entries.filter((e: { resource_id: string | null }) => e.resource_id === traceId);
    expect(ofTrace.map((e: { operation: string }) => e.operation).sort()).toEqual(['trace.completed', 'trace.started']);
  });

  it('a trace without steps seals the root of nothing', async () => {
    const { traceId, seal } = await sealedTrace(pro, []);
    expect(seal).toMatchObject({ step_count: 0, integrity_root_hash: sha256('') });
    expect((await verifyOf(pro, traceId)).valid).toBe(true);
  });

  it('refuses steps and a second completion once sealed, and verify and certificate before it', async () => {
    const traceId = await start(pro);
    for (const path of ['verify']) {
      const early = await post(pro, `/v1/traces/${traceId}/${path}`);
      expect(early.status).toBe(400);
      expect(errorOf(early).code).toBe('TRACE_NOT_COMPLETED');
    }
    const cert = await get(pro, `/v1/traces/${traceId}/certificate`);
    expect([cert.status, errorOf(cert).code]).toEqual([400, 'TRACE_NOT_COMPLETED']);
    expect(errorOf(cert).message).toContain(`POST /v1/traces/${traceId}/complete`); // the trace's own path, no placeholder
    await step(pro, traceId, { type: 'THOUGHT', content: 'one' });
    expect((await post(pro, `/v1/traces/${traceId}/complete`)).status).toBe(200);
    const late = await post(pro, `/v1/traces/${traceId}/steps`, { type: 'THOUGHT', content: 'too late' });
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ code: 'CONFLICT', status: 409, trace_status: 'completed' });
    expect((await post(pro, `/v1/traces/${traceId}/complete`)).status).toBe(409);
  });

  it('a fatal ERROR step fails the trace, sealed and signed; a plain ERROR does not', async () => {
    const traceId = await start(pro);
    expect((await step(pro, traceId, { type: 'ERROR', content: 'timeout, retrying', metadata: { fatal: false } })).trace_status).toBe('active');
    const fatal = await step(pro, traceId, { type: 'ERROR', content: 'card declined', metadata: { fatal: true, code: 'card_declined' } });
    expect(fatal).toMatchObject({ step_index: 1, trace_status: 'failed' });
    const got = await get(pro, `/v1/traces/${traceId}`);
    expect(got.body.trace).toMatchObject({
      status: 'failed',
      step_count: 2,
      integrity_root_hash: fatal.integrity_chain_hash,
      signature_algorithm: 'RSA-PSS-SHA256',
    });
    expect(got.body.trace.completed_at).toBe(engine.clock.now().toISOString());
    expect(await verifyOf(pro, traceId)).toMatchObject({ valid: true });
    expect((await post(pro, `/v1/traces/${traceId}/steps`, { type: 'THOUGHT', content: 'after' })).status).toBe(409);
    expect((await get(pro, `/v1/traces/${traceId}/certificate`)).body.status).toBe('failed');
  });
});

describe('concurrency', () => {
  it('20 parallel appends get indexes 0 to 19 with no gap and a valid chain', async () => {
    const traceId = await start(pro);
    const added = await Promise.all(Array.from({ length: 20 }, (_, i) => step(pro, traceId, { type: 'THOUGHT', content: `thought ${i}` })));
    expect(added.map((a) => a.step_index).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    await post(pro, `/v1/traces/${traceId}/complete`);
    expect(await verifyOf(pro, traceId)).toMatchObject({ valid: true, step_count: 20 });
  });

  it('a completion racing appends seals exactly the steps that got in; the rest get 409', async () => {
    const traceId = await start(pro);
    await step(pro, traceId, { type: 'THOUGHT', content: 'first' });
    const appends = Array.from({ length: 10 }, (_, i) => post(pro, `/v1/traces/${traceId}/steps`, { type: 'ACTION', content: `call ${i}` }));
    const [done, ...results] = await Promise.all([post(pro, `/v1/traces/${traceId}/complete`), ...appends]);
    expect(done.status).toBe(200);
    const accepted = results.filter((r) => r.status === 201);
    expect(results.every((r) => r.status === 201 || r.status === 409)).toBe(true);
    expect(done.body.step_count).toBe(1 + accepted.length);
    expect(Math.max(0, ...accepted.map((r) => r.body.step_index))).toBeLessThan(done.body.step_count);
    expect(await verifyOf(pro, traceId)).toMatchObject({ valid: true });
  });
});

describe('tampering with stored rows makes verify fail and say what broke', () => {
  const tampered = async (change: (traceId: string) => Promise<unknown>) => {
    const { traceId } = await sealedTrace(pro, STEPS);
    await change(traceId);
    return verifyOf(pro, traceId);
  };
  const at = (traceId: string, index: number) => sql`trace_id = ${traceId} AND step_index = ${index}`;

  it('content', async () => {
    const v = await tampered((id) => exec(sql`UPDATE trace_steps SET content = 'refund 4200 EUR' WHERE ${at(id, 1)}`));
    expect(v).toMatchObject({ valid: false, chain_valid: false, signature_valid: true });
    expect(problems(v)).toEqual(['1:integrity_hash_mismatch']);
    expect(v.discrepancies?.[0].step_id).toMatch(/^stp_/);
  });

  it('metadata and type', async () => {
    expect(problems(await tampered((id) => exec(sql`UPDATE trace_steps SET metadata = '{"tool":"paypal"}' WHERE ${at(id, 1)}`)))).toEqual([
      '1:integrity_hash_mismatch',
    ]);
    expect(problems(await tampered((id) => exec(sql`UPDATE trace_steps SET type = 'THOUGHT' WHERE ${at(id, 1)}`)))).toEqual([
      '1:integrity_hash_mismatch',
      'null:certificate_signature_invalid',
    ]);
    expect(problems(await tampered((id) => exec(sql`UPDATE trace_steps SET created_at = created_at + interval '1 second' WHERE ${at(id, 1)}`)))).toEqual([
      '1:integrity_hash_mismatch',
    ]);
  });

  it('the order of two steps', async () => {
    const v = await tampered(async (id) => {
      await exec(sql`UPDATE trace_steps SET step_index = 99 WHERE ${at(id, 1)}`);
      await exec(sql`UPDATE trace_steps SET step_index = 1 WHERE ${at(id, 2)}`);
      await exec(sql`UPDATE trace_steps SET step_index = 2 WHERE ${at(id, 99)}`);
    });
    expect(v.valid).toBe(false);
    expect(problems(v)).toEqual(expect.arrayContaining(['1:integrity_hash_mismatch', '2:integrity_hash_mismatch', '1:previous_chain_hash_mismatch']));
  });

  it('a deleted step, in the middle or at the end', async () => {
    const middle = await tampered((id) => exec(sql`DELETE FROM trace_steps WHERE ${at(id, 2)}`));
    expect(problems(middle)).toEqual(['2:missing_step', '3:previous_chain_hash_mismatch', 'null:step_count_mismatch', 'null:certificate_signature_invalid']);
    const last = await tampered((id) => exec(sql`DELETE FROM trace_steps WHERE ${at(id, 3)}`));
    expect(problems(last)).toEqual(['3:missing_step', 'null:step_count_mismatch', 'null:root_hash_mismatch', 'null:certificate_signature_invalid']);
    expect(last.signature_valid).toBe(false);
  });

  it('a step rewritten with a consistent chain still breaks the signed root', async () => {
    const v = await tampered(async (id) => {
      const rows = await engine.sql<{ step_index: number; type: string; content: string; metadata: object; created_at: Date }>(
        sql`SELECT step_index, type, content, metadata, created_at, previous_chain_hash FROM trace_steps WHERE trace_id = ${id} ORDER BY step_index`,
      );
      let previous: string | null = null;
      for (const r of rows) {
        const content = r.step_index === 3 ? 'Refunded 4200 EUR.' : r.content;
        const ih = integrity(id, r.step_index, { ...r, content, created_at: new Date(r.created_at).toISOString() });
        const ch = sha256((previous ?? '') + ih);
        await exec(
          sql`UPDATE trace_steps SET content = ${content}, integrity_hash = ${ih}, chain_hash = ${ch}, previous_chain_hash = ${previous} WHERE ${at(id, r.step_index)}`,
        );
        previous = ch;
      }
    });
    expect(problems(v)).toEqual(['null:root_hash_mismatch', 'null:certificate_signature_invalid']);
  });

  it('the signature, or the root hash it signs', async () => {
    const sig = await tampered(async (id) => {
      const rows = await engine.sql<{ signature: string }>(sql`SELECT signature FROM traces WHERE id = ${id}`);
      const bytes = Buffer.from(rows[0].signature, 'base64');
      bytes[10] ^= 1;
      await exec(sql`UPDATE traces SET signature = ${bytes.toString('base64')} WHERE id = ${id}`);
    });
    expect(sig).toMatchObject({ valid: false, chain_valid: true, signature_valid: false });
    expect(problems(sig)).toEqual(['null:signature_invalid', 'null:certificate_signature_invalid']);
    const root = await tampered((id) => exec(sql`UPDATE traces SET integrity_root_hash = ${sha256('forged')} WHERE id = ${id}`));
    expect(problems(root)).toEqual(['null:root_hash_mismatch', 'null:signature_invalid', 'null:certificate_signature_invalid']);
  });

  it('the agent, the status or the seal time: only certificate_signature covers them', async () => {
    for (const change of [
      (id: string) => exec(sql`UPDATE traces SET agent_id = 'another-agent' WHERE id = ${id}`),
      (id: string) => exec(sql`UPDATE traces SET status = 'failed' WHERE id = ${id}`),
      (id: string) => exec(sql`UPDATE traces SET signed_at = signed_at - interval '1 day' WHERE id = ${id}`),
    ]) {
      const v = await tampered(change);
      expect(v).toMatchObject({ valid: false, chain_valid: true, signature_valid: false });
      expect(problems(v)).toEqual(['null:certificate_signature_invalid']);
    }
  });
});

describe('key rotation and idle traces', () => {
  it('a trace signed by a rotated-out key still verifies, and its certificate carries that key', async () => {
    const { traceId, seal } = await sealedTrace(pro, STEPS.slice(0, 2));
    const services = engine.node.services;
    const original = services.signingKey;
    // The operator replaces TRACE_SIGNING_KEY and restarts: the services' key is the new one.
    services.signingKey = configuredSigningKey(await generateSigningKeyPem());
    try {
      const now = (await get(pro, '/v1/traces/public-key')).body;
      expect(now.key_id).not.toBe(seal.key_id);
      const fresh = await sealedTrace(pro, STEPS.slice(0, 1));
      expect(fresh.seal.key_id).toBe(now.key_id);
      expect(await verifyOf(pro, traceId)).toMatchObject({ valid: true, key_id: seal.key_id });
      const cert = (await get(pro, `/v1/traces/${traceId}/certificate`)).body;
      expect(cert.key_id).toBe(seal.key_id);
      expect(cert.public_key).not.toBe(now.public_key);
      expect(pssVerify(cert.public_key, cert.integrity_root_hash, cert.signature)).toBe(true);
    } finally {
      services.signingKey = original;
    }
  });

  it('an active trace idle past TRACE_IDLE_TIMEOUT_HOURS is sealed as interrupted, its last step flagged', async () => {
    const traceId = await start(pro);
    await step(pro, traceId, { type: 'THOUGHT', content: 'thinking' });
    await step(pro, traceId, { type: 'ACTION', content: 'calling a tool that never answers' });
    const busy = await start(pro);
    // Backdated rather than moving the clock: on Postgres other suites' traces share the table.
    const lastActive = new Date(engine.clock.now().getTime() - 25 * 3_600_000);
    await exec(sql`UPDATE traces SET last_activity_at = ${lastActive.toISOString()} WHERE id = ${traceId}`);
    await engine.node.runner.maintain();
    const got = (await get(pro, `/v1/traces/${traceId}`)).body;
    expect(got.trace).toMatchObject({ status: 'interrupted', step_count: 2 });
    expect(got.steps.map((s: { was_interrupted: boolean }) => s.was_interrupted)).toEqual([false, true]);
    expect(await verifyOf(pro, traceId)).toMatchObject({ valid: true });
    expect((await get(pro, `/v1/traces/${busy}`)).body.trace.status).toBe('active');
    expect((await post(pro, `/v1/traces/${traceId}/steps`, { type: 'THOUGHT', content: 'back' })).status).toBe(409);
  });
});

describe('listing, limits, tiers and tenants', () => {
  it('lists newest first with agent and status filters and the seal fields', async () => {
    const t = await engine.newTenant('pro');
    const a = await start(t, { agent_id: 'alpha' });
    engine.clock.advance(1_000);
    const b = await start(t, { agent_id: 'beta' });
    await post(t, `/v1/traces/${a}/complete`);
    const all = await get(t, '/v1/traces');
    expect(all.body.traces.map((x: { trace_id: string }) => x.trace_id)).toEqual([b, a]);
    expect(all.body).toMatchObject({ total: 2, has_more: false, limit: 20, offset: 0 });
    expect(all.body.traces[1]).toMatchObject({ status: 'completed', step_count: 0, signature_algorithm: 'RSA-PSS-SHA256' });
    expect((await get(t, '/v1/traces?agent_id=alpha')).body.traces.map((x: { trace_id: string }) => x.trace_id)).toEqual([a]);
    expect((await get(t, '/v1/traces?status=active')).body.traces.map((x: { trace_id: string }) => x.trace_id)).toEqual([b]);
    expect((await get(t, '/v1/traces?limit=1')).body).toMatchObject({ total: 2, has_more: true });
    for (const q of ['limit=0', 'limit=101', 'status=done']) expect((await get(t, `/v1/traces?${q}`)).status, q).toBe(400);
  });

  it('answers 400 to bad steps', async () => {
    const nested = (levels: number) => {
      let value: unknown = 1;
      for (let i = 0; i < levels; i++) value = [value];
      return value;
    };
    const traceId = await start(pro);
    const bad = [
      { type: 'DREAM', content: 'x' },
      { type: 'THOUGHT' },
      { content: 'x' },
      { type: 'THOUGHT', content: 'é'.repeat(32 * 1024 + 1) },
      { type: 'THOUGHT', content: 'x', metadata: { blob: 'x'.repeat(16 * 1024) } },
      { type: 'THOUGHT', content: 'x', metadata: ['not', 'an', 'object'] },
      { type: 'THOUGHT', content: 'x', metadata: { deep: nested(32) } },
    ];
    for (const body of bad) expect((await post(pro, `/v1/traces/${traceId}/steps`, body)).status, JSON.stringify(body).slice(0, 80)).toBe(400);
    // Deeper than JSON.stringify itself manages here: sent as text.
    const deep = `{"type":"THOUGHT","content":"x","metadata":{"deep":${'['.repeat(5_000)}1${']'.repeat(5_000)}}}`;
    const tooDeep = await engine.request('POST', `/v1/traces/${traceId}/steps`, { key: pro.key, raw: deep, headers: { 'content-type': 'application/json' } });
    expect([tooDeep.status, errorOf(tooDeep).code]).toEqual([400, 'VALIDATION_ERROR']);
    expect((await post(pro, '/v1/traces', {})).status).toBe(400);
    expect((await post(pro, '/v1/traces', { agent_id: 'a', tags: ['x'.repeat(51)] })).status).toBe(400);
    expect((await post(pro, `/v1/traces/${traceId}/steps`, { type: 'THOUGHT', content: 'x'.repeat(64 * 1024) })).status).toBe(201);
    expect((await post(pro, `/v1/traces/${traceId}/steps`, { type: 'THOUGHT', content: 'x', metadata: { deep: nested(31) } })).status).toBe(201);
  });

  it("another tenant's trace is not found, exactly like an unknown one", async () => {
    const other = await engine.newTenant('pro');
    const traceId = await start(pro);
    await step(pro, traceId, { type: 'THOUGHT', content: 'private' });
    const unknown = 'trc_0000000000000000000000';
    for (const [method, suffix] of [
      ['GET', ''],
      ['POST', '/steps'],
      ['POST', '/complete'],
      ['POST', '/verify'],
      ['GET', '/certificate'],
    ] as const) {
      const body = suffix === '/steps' ? { type: 'THOUGHT', content: 'x' } : {};
      const theirs = await engine.request(method, `/v1/traces/${traceId}${suffix}`, { key: other.key, body: method === 'POST' ? body : undefined });
      const none = await engine.request(method, `/v1/traces/${unknown}${suffix}`, { key: other.key, body: method === 'POST' ? body : undefined });
      expect([theirs.status, errorOf(theirs).code, errorOf(theirs).message], suffix).toEqual([404, 'NOT_FOUND', errorOf(none).message]);
    }
    expect((await get(other, '/v1/traces')).body.total).toBe(0);
    expect((await get(pro, `/v1/traces/${traceId}`)).body.trace.status).toBe('active');
  });

  it('needs Pro; the public key needs only a key', async () => {
    for (const tier of ['free', 'starter'] as const) {
      const t = await engine.newTenant(tier);
      const res = await post(t, '/v1/traces', { agent_id: 'a' });
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ code: 'FEATURE_NOT_AVAILABLE', required_tier: 'pro', current_tier: tier });
      expect((await get(t, '/v1/traces/public-key')).status).toBe(200);
    }
    expect((await engine.request('GET', '/v1/traces/public-key')).status).toBe(401);
  });
});
