import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import canonicalize from 'canonicalize';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventBodySql } from '../shared/jobs/events';
import { verifySignature } from '../shared/platform/contract/trace-signing';
import { createEngine, errorOf, type Tenant, type TestEngine } from './harness';
import { tablesHolding as holding } from './tables-holding';

/**
 * POST /v1/erasures and DELETE /v1/account (docs/security.md#erasure): the erased text leaves every
 * table, the audit chain still verifies, replay and rollback cannot show or bring it back, and the
 * receipt verifies offline.
 */
let engine: TestEngine;
let dir: string;
beforeAll(async () => {
  // Eval baselines (experimental) are one of the places an erased text may be quoted.
  engine = await createEngine({ env: { SVC_ENABLE_EXPERIMENTAL: '1' } });
  dir = mkdtempSync(join(tmpdir(), 'engram-erasure-'));
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await engine.close();
});

type Receipt = Record<string, unknown> & { signature: string; key_id: string; memory_ids: string[]; counts: Record<string, number> };

const tick = (ms = 1000) => engine.clock.advance(ms);
const now = () => engine.clock.now().toISOString();
const store = async (t: Tenant, observation: string, extra: Record<string, unknown> = {}) => {
  const res = await engine.request('POST', '/v1/memories', { key: t.key, body: { observation, auto_link: false, ...extra } });
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
};
const erase = (t: Tenant, body: Record<string, unknown>) =>
  engine.request('POST', '/v1/erasures', { key: t.key, body: { reason: 'GDPR Art. 17 request', ...body } });

/** Every table of the public schema whose rows, as text, contain `needle`. */
const tablesHolding = (needle: string) => holding(engine, needle);

async function publicKey(t: Tenant) {
  const res = await engine.request('GET', '/v1/traces/public-key', { key: t.key });
  expect(res.status).toBe(200);
  return res.body as { public_key: string; key_id: string };
}

const verifies = async (pem: string, receipt: Receipt) => {
  const { signature, ...signed } = receipt;
  return verifySignature(pem, canonicalize(signed)!, signature);
};

describe('POST /v1/erasures', () => {
  it('erases the text from every table, keeps the audit chain valid, and answers a receipt that verifies', async () => {
    const t = await engine.newTenant('enterprise');
    const secret = 'Erase-me: the patient Jane Roe takes 20mg of drug X daily';
    const kept = 'Kept: the office opens at nine';
    const webhook = await engine.request('POST', '/v1/webhooks', {
      key: t.key,
      body: { url: 'https://hooks.example.com/engram', events: ['memory.created', 'memory.updated'] },
    });
    expect(webhook.status, webhook.text).toBe(201);
    const stored = await engine.request('POST', '/v1/memories', {
      key: t.key,
      headers: { 'idempotency-key': 'erasure-test-store-1' },
      body: { observation: secret, tags: ['patient:jane'], agent_id: 'intake', auto_link: false },
    });
    expect(stored.status, stored.text).toBe(201);
    const id = stored.body.id as string;
    await store(t, kept, { tags: ['office'] });
    const baseline = await engine.request('POST', '/v1/eval/baselines', { key: t.key, body: { query: 'what does Jane take', expected_observation: secret } });
    expect(baseline.status, baseline.text).toBe(201);
    const triple = await engine.request('POST', '/v1/knowledge/triples', {
      key: t.key,
      body: { subject: 'jane roe', predicate: 'takes', object: 'drug x', source_memory_id: id },
    });
    expect(triple.status, triple.text).toBe(201);
    tick();
    const before = now();
    tick();
    const patched = await engine.request('PATCH', `/v1/memories/${id}`, { key: t.key, body: { observation: `${secret} (revised)` } });
    expect(patched.status, patched.text).toBe(200);
    tick();
    expect(await tablesHolding(secret)).not.toEqual([]);

    const res = await erase(t, { tags: ['patient:jane'] });
    expect(res.status, res.text).toBe(201);
    const receipt = res.body as unknown as Receipt;
    expect(receipt).toMatchObject({
      reason: 'GDPR Art. 17 request',
      dry_run: false,
      selector: { tags: ['patient:jane'] },
      memory_ids: [id],
      signature_algorithm: 'RSA-PSS-SHA256',
    });
    expect(receipt.erasure_id).toMatch(/^ers_/);
    expect(receipt.counts).toMatchObject({ memories: 1 });
    expect(receipt.counts.events).toBeGreaterThanOrEqual(2);
    expect(receipt.counts.postings).toBeGreaterThan(0);
    expect(receipt.counts.stream_events).toBeGreaterThanOrEqual(2);
    expect(receipt.counts).toMatchObject({ eval_baselines: 1, triples_unlinked: 1 });
    expect(receipt.counts.idempotency_records).toBeGreaterThanOrEqual(1);
    tick();

    expect(await tablesHolding(secret)).toEqual([]);
    expect(await tablesHolding(kept)).toContain('memories');

    // The memory.created event named its memory's create event, now gone: its body is stored
    // whole, redacted, and a stream or a delivery sends that.
    const [created] = await engine.sql<{ memory_id: string | null; body: { data: unknown } }>(
      sql`SELECT e.memory_id, ${eventBodySql('e')} AS body FROM events e WHERE e.tenant_id = ${t.tenantId} AND e.type = 'memory.created' ORDER BY e.seq LIMIT 1`,
    );
    expect(created).toEqual({ memory_id: null, body: expect.objectContaining({ data: { memory: { uuid: id, erased: true } } }) });

    // Postings and corpus statistics agree with what is left.
    const [stats] = await engine.sql<{ docs: string | number }>(sql`SELECT sum(docs) AS docs FROM memory_corpus_stats WHERE tenant_id = ${t.tenantId}`);
    expect(Number(stats.docs)).toBe(1);
    const bare = id.slice('urn:uuid:'.length);
    expect(await engine.sql(sql`SELECT 1 FROM memory_postings WHERE memory_id = ${bare}::uuid`)).toEqual([]);

    const verify = await engine.request('GET', '/v1/audit/verify', { key: t.key });
    expect(verify.status, verify.text).toBe(200);
    expect(verify.body.valid).toBe(true);
    const audit = await engine.request('GET', '/v1/audit?limit=100', { key: t.key });
    const entry = audit.body.entries.find((e: { operation: string }) => e.operation === 'erasure.completed');
    expect(entry).toMatchObject({ resource_id: receipt.erasure_id });
    expect(receipt.audit_seq).toBe(entry!.seq);

    expect((await engine.request('GET', `/v1/memories/${id}`, { key: t.key })).status).toBe(404);
    expect((await engine.request('PATCH', `/v1/memories/${id}`, { key: t.key, body: { importance: 3 } })).status).toBe(404);
    expect((await engine.request('DELETE', `/v1/memories/${id}`, { key: t.key })).status).toBe(404);
    const search = await engine.request('POST', '/v1/memories/search', { key: t.key, body: { query: 'patient Jane Roe drug' } });
    expect(JSON.stringify(search.body)).not.toContain('Jane Roe');

    const q = (s: string) => encodeURIComponent(s);
    const replays = await Promise.all([
      engine.request('GET', '/v1/replay/timeline?limit=1000', { key: t.key }),
      engine.request('GET', `/v1/replay/snapshot?at=${q(now())}`, { key: t.key }),
      engine.request('GET', `/v1/replay/snapshot?at=${q(before)}`, { key: t.key }),
      engine.request('GET', `/v1/replay/diff?from=${q(before)}&to=${q(now())}`, { key: t.key }),
      engine.request('GET', `/v1/replay/recall?q=${q('patient Jane Roe')}&at=${q(before)}`, { key: t.key }),
    ]);
    for (const r of replays) {
      expect(r.status, r.text).toBe(200);
      expect(r.text).not.toContain('takes 20mg');
      expect(r.text).not.toContain(bare);
    }
    expect((await engine.request('GET', `/v1/replay/memory/${id}`, { key: t.key })).status).toBe(404);

    const preview = await engine.request('GET', `/v1/rollback/preview?target=${q(before)}`, { key: t.key });
    expect(preview.status, preview.text).toBe(200);
    expect(preview.body.erased).toBe(1);
    const rolled = await engine.request('POST', '/v1/rollback', { key: t.key, body: { target: before } });
    expect(rolled.status, rolled.text).toBe(200);
    expect(rolled.body.erased).toBe(1);
    expect((await engine.request('GET', `/v1/memories/${id}`, { key: t.key })).status).toBe(404);
    expect(await tablesHolding('Jane Roe')).toEqual([]);

    const exported = await engine.request('GET', '/v1/memories/export?format=json', { key: t.key });
    expect(exported.text).toContain(kept);
    expect(exported.text).not.toContain('Jane Roe');

    const key = await publicKey(t);
    expect(receipt.key_id).toBe(key.key_id);
    expect(await verifies(key.public_key, receipt)).toBe(true);
    expect(await verifies(key.public_key, { ...receipt, memory_ids: [] })).toBe(false);
    expect(await verifies(key.public_key, { ...receipt, counts: { ...receipt.counts, memories: 0 } })).toBe(false);

    const got = await engine.request('GET', `/v1/erasures/${receipt.erasure_id}`, { key: t.key });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(receipt);
    const list = await engine.request('GET', '/v1/erasures', { key: t.key });
    expect(list.body).toMatchObject({ total: 1, erasures: [receipt] });
    const events = await engine.sql<{ type: string; payload: { data: Record<string, unknown> } }>(
      sql`SELECT type, payload FROM events WHERE tenant_id = ${t.tenantId} AND type = 'erasure.completed'`,
    );
    expect(events).toHaveLength(1);
    expect(events[0].payload.data).toMatchObject({ erasure_id: receipt.erasure_id, memory_count: 1 });
  });

  it('erases deleted and expired memories too, by agent, id and time', async () => {
    const t = await engine.newTenant('pro');
    const deleted = await store(t, 'Deleted-but-remembered: card ending 4242', { agent_id: 'billing' });
    expect((await engine.request('DELETE', `/v1/memories/${deleted}`, { key: t.key })).status).toBe(200);
    await store(t, 'Short-lived: the door code is 1234', { agent_id: 'billing', ttl_seconds: 60 });
    tick(120_000);
    const keep = await store(t, 'Another agent keeps this', { agent_id: 'support' });
    expect(await tablesHolding('card ending 4242')).toContain('memory_events');

    const res = await erase(t, { agent_id: 'billing' });
    expect(res.status, res.text).toBe(201);
    expect(res.body.memory_ids).toHaveLength(2);
    expect(res.body.memory_ids).toContain(deleted);
    expect(await tablesHolding('card ending 4242')).toEqual([]);
    expect(await tablesHolding('door code is 1234')).toEqual([]);
    expect((await engine.request('GET', `/v1/memories/${keep}`, { key: t.key })).status).toBe(200);

    const byTime = await erase(t, { before: now(), memory_ids: [keep] });
    expect(byTime.body.memory_ids).toEqual([]);
    tick();
    const later = await erase(t, { before: now(), memory_ids: [keep] });
    expect(later.body.memory_ids).toEqual([keep]);
  });

  it('a dry run counts and writes nothing; a selector that matches nothing is a receipt with zero counts', async () => {
    const t = await engine.newTenant('pro');
    const id = await store(t, 'Dry-run subject stays', { tags: ['dry'] });
    const dry = await erase(t, { tags: ['dry'], dry_run: true });
    expect(dry.status, dry.text).toBe(201);
    expect(dry.body).toMatchObject({ dry_run: true, memory_ids: [id], audit_seq: null, chain_head: null, counts: { memories: 1 } });
    expect(await verifies((await publicKey(t)).public_key, dry.body as unknown as Receipt)).toBe(true);
    expect((await engine.request('GET', `/v1/memories/${id}`, { key: t.key })).status).toBe(200);
    expect((await engine.request('GET', `/v1/erasures/${dry.body.erasure_id}`, { key: t.key })).status).toBe(404);
    expect((await engine.request('GET', '/v1/erasures', { key: t.key })).body.total).toBe(0);

    const none = await erase(t, { tags: ['nothing-has-this'] });
    expect(none.status).toBe(201);
    expect(none.body.memory_ids).toEqual([]);
    expect(Object.values(none.body.counts).every((n) => n === 0)).toBe(true);

    const bad = await engine.request('POST', '/v1/erasures', { key: t.key, body: { reason: 'no selector' } });
    expect(bad.status).toBe(400);
    const tooMany = await erase(t, { memory_ids: Array.from({ length: 1001 }, () => id) });
    expect(tooMany.status).toBe(400);
  });

  it("another tenant's memory ids erase nothing and are not named", async () => {
    const a = await engine.newTenant('pro');
    const b = await engine.newTenant('pro');
    const theirs = await store(b, 'Belongs to tenant B only');
    const res = await erase(a, { memory_ids: [theirs, 'urn:uuid:00000000-0000-7000-8000-000000000000', 'not-an-id'] });
    expect(res.status, res.text).toBe(201);
    expect(res.body.memory_ids).toEqual([]);
    expect(JSON.stringify(res.body.counts)).not.toMatch(/[1-9]/);
    expect((await engine.request('GET', `/v1/memories/${theirs}`, { key: b.key })).status).toBe(200);
  });

  it('an erasure racing updates, stores and a rollback leaves no content behind', async () => {
    const t = await engine.newTenant('pro');
    const ids = await Promise.all(Array.from({ length: 5 }, (_, i) => store(t, `Racing secret number ${i}`, { tags: ['race'] })));
    tick();
    const target = now();
    tick();
    const results = await Promise.all([
      erase(t, { tags: ['race'] }),
      ...ids.map((id, i) => engine.request('PATCH', `/v1/memories/${id}`, { key: t.key, body: { observation: `Racing secret number ${i} v2` } })),
      engine.request('POST', '/v1/memories', { key: t.key, body: { observation: 'Racing secret number 0', tags: ['race'] } }),
      engine.request('POST', '/v1/rollback', { key: t.key, body: { target } }),
    ]);
    expect(results[0].status, results[0].text).toBe(201);
    for (const r of results.slice(1)) expect([200, 201, 404, 409]).toContain(r.status);
    // A store that committed after the erasure is a new memory; erase that too and nothing is left.
    const again = await erase(t, { tags: ['race'] });
    expect(again.status).toBe(201);
    expect(await tablesHolding('Racing secret')).toEqual([]);
    const verify = await engine.request('GET', '/v1/audit/verify', { key: t.key });
    expect(verify.body.valid).toBe(true);
  });

  it('a restricted key needs erasures:write; a confined key cannot erase', async () => {
    const t = await engine.newTenant('pro');
    const mint = (body: Record<string, unknown>) => engine.request('POST', '/v1/keys/restricted', { key: t.key, body: { name: 'k', ...body } });
    const reader = await mint({ scopes: ['memories:read'] });
    expect(reader.status, reader.text).toBe(201);
    const refused = await engine.request('POST', '/v1/erasures', { key: reader.body.api_key, body: { tags: ['x'], reason: 'r' } });
    expect(refused.status).toBe(403);
    expect(errorOf(refused).required_scope).toBe('erasures:write');
  });
});

describe('the receipt verifies with openssl', () => {
  const DOC = readFileSync(new URL('../docs/security.md', import.meta.url), 'utf8');
  const SCRIPT = /```bash\n(# verify-receipt\.sh[\s\S]*?)```/.exec(DOC)?.[1];
  const tools = ['jq', 'openssl', 'sha256sum', 'base64'].every((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0);

  it.skipIf(!tools && !process.env.CI)('runs the recipe of docs/security.md on a real receipt and a tampered one', async () => {
    expect(SCRIPT).toContain('openssl dgst -sha256');
    const t = await engine.newTenant('pro');
    await store(t, 'Receipt subject — with ünïcode and "quotes"', { tags: ['openssl'] });
    const receipt = (await erase(t, { tags: ['openssl'], reason: 'Löschung nach Art. 17 "DSGVO"' })).body;
    writeFileSync(join(dir, 'key.json'), JSON.stringify(await publicKey(t)));
    const run = (r: unknown) => {
      writeFileSync(join(dir, 'receipt.json'), JSON.stringify(r));
      return spawnSync('bash', ['-c', SCRIPT!], { cwd: dir, encoding: 'utf8' });
    };
    const ok = run(receipt);
    expect(ok.status, ok.stderr).toBe(0);
    expect(ok.stdout).toContain('Verified OK');
    const tampered = run({ ...receipt, counts: { ...receipt.counts, memories: 0 } });
    expect(tampered.status).not.toBe(0);
  });
});

describe('DELETE /v1/account', () => {
  it('refuses a wrong e-mail and a restricted key, then erases everything and revokes every key', async () => {
    const t = await engine.newTenant('pro');
    const other = await engine.newTenant('pro');
    await store(t, 'Account-wide secret: my home address is 1 Main St');
    await store(other, 'The other account keeps its memory');
    await engine.request('POST', '/v1/context-spaces', { key: t.key, body: { name: 'mine' } });
    await engine.request('POST', '/v1/traces', { key: t.key, body: { agent_id: 'bot' } });
    const restricted = await engine.request('POST', '/v1/keys/restricted', { key: t.key, body: { name: 'all', scopes: ['*'] } });

    const wrong = await engine.request('DELETE', '/v1/account', { key: t.key, body: { confirm: 'someone@else.example' } });
    expect(wrong.status).toBe(400);
    expect(errorOf(wrong).code).toBe('CONFIRMATION_MISMATCH');
    const byRestricted = await engine.request('DELETE', '/v1/account', { key: restricted.body.api_key, body: { confirm: t.email } });
    expect(byRestricted.status).toBe(403);
    expect(await tablesHolding('1 Main St')).not.toEqual([]);

    const res = await engine.request('DELETE', '/v1/account', { key: t.key, body: { confirm: t.email.toUpperCase() } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ selector: { account: true }, counts: { memories: 1 } });
    expect(await verifies((await publicKey(other)).public_key, res.body as unknown as Receipt)).toBe(true);
    expect(await tablesHolding('1 Main St')).toEqual([]);
    expect(await tablesHolding(t.email)).toEqual([]);
    expect(await tablesHolding('The other account keeps its memory')).toContain('memories');
    for (const table of ['traces', 'context_spaces', 'memories', 'events']) {
      const [left] = await engine.sql<{ n: string | number }>(
        sql`SELECT count(*) AS n FROM ${sql.identifier(table)} WHERE ${sql.identifier(table === 'context_spaces' ? 'owner_tenant_id' : 'tenant_id')} = ${t.tenantId} AND ${sql.raw(table === 'events' ? "type <> 'erasure.completed'" : 'true')}`,
      );
      expect(Number(left.n), table).toBe(0);
    }
    expect((await engine.request('GET', '/v1/memories', { key: t.key })).status).toBe(401);
    expect((await engine.request('GET', '/v1/memories', { key: restricted.body.api_key })).status).toBe(401);
    const [chain] = await engine.sql<{ n: string | number }>(sql`SELECT count(*) AS n FROM audit_log WHERE tenant_id = ${t.tenantId}`);
    expect(Number(chain.n)).toBeGreaterThan(0);
  });
});
