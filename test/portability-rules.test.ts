import { createHash } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PAYLOADS } from './actions-helpers';
import { createEngine, type Tenant, type TestEngine } from './harness';

/**
 * docs/portability.md#what-an-import-checks: a bundle's spaces, policies, agents, packs and triples
 * are restored through their families' create verbs, so an import is refused what the routes refuse
 * (line by line), needs the scopes those routes need, audits each record, cannot store text
 * Postgres refuses, and does not bring back what an erasure removed.
 */
let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

type Summary = {
  stored: Record<string, number>;
  already_imported: number;
  failed: number;
  erased: number;
  invalid: number;
  errors: { line: number; code: string; message: string }[];
};

/** A bundle of `records` with a valid header and trailer, as GET /v1/export/bundle writes one. */
function bundle(records: Record<string, unknown>[]): string {
  const header = { type: 'header', format: 'engram-bundle', version: 1, exported_at: '2026-11-01T00:00:00.000Z', tenant_id: 'ten_x', counts: {} };
  const body = [header, ...records].map((r) => `${JSON.stringify(r)}\n`).join('');
  return `${body}${JSON.stringify({ type: 'trailer', lines: records.length + 1, sha256: createHash('sha256').update(body).digest('hex') })}\n`;
}

const importBundle = async (t: Tenant, file: string, key = t.key) => {
  const res = await engine.request('POST', '/v1/import?format=bundle', { key, raw: file, headers: { 'content-type': 'application/x-ndjson' } });
  expect(res.status, res.text).toBe(200);
  return res.body as unknown as Summary;
};

const errorsByLine = (s: Summary) => Object.fromEntries(s.errors.map((e) => [e.line, e.code]));

let n = 0;
const policy = (fields: Record<string, unknown>) => ({
  type: 'policy',
  id: `pol_import${++n}`,
  name: `Imported${n}`,
  rules: [{ match: 'drop table', severity: 'high' }],
  ...fields,
});

describe('bundle records go through the families’ verbs', () => {
  it('refuses every policy the route refuses, line by line, and later actions answer normally', async () => {
    const t = await engine.newTenant('enterprise');
    const rules = (count: number) => Array.from({ length: count }, (_, i) => ({ match: `word${i}`, severity: 'low' }));
    const bad = [
      policy({ rules: [{ match: '(?<=a)b(', severity: 'high' }] }),
      policy({ rules: {} }),
      policy({ rules: [{}] }),
      policy({ rules: [] }),
      policy({ rules: rules(101) }),
      policy({ rules: [{ match: 'x', severity: 'apocalyptic' }] }),
      policy({ rules: [{ match: 'x', severity: 'low', confidence: 7 }] }),
      policy({ name: 'has spaces and ümlauts' }),
      policy({ name: 'FinancialSafetyPolicy' }),
      policy({ step_types: ['nonsense'] }),
      policy({ whitelisted_domains: ['not a domain'] }),
    ];
    const good = policy({ name: 'BlockDrops', rules: [{ match: String.raw`\bdrop\s+table\b`, severity: 'critical' }] });
    const result = await importBundle(t, bundle([...bad, good]));
    expect(result.stored.policy).toBe(1);
    expect(result.errors).toHaveLength(bad.length);
    for (let line = 2; line < 2 + bad.length; line++) expect(errorsByLine(result)[line], `line ${line}`).toBeDefined();
    const stored = await engine.sql<{ name: string }>(sql`SELECT name FROM policies WHERE tenant_id = ${t.tenantId}`);
    expect(stored.map((p) => p.name)).toEqual(['BlockDrops']);

    for (const [payload, status] of [
      [PAYLOADS.allowed, 'allowed'],
      [PAYLOADS.pending, 'pending_review'],
    ] as const) {
      const res = await engine.request('POST', '/v1/actions', { key: t.key, body: payload });
      expect(res.status, res.text).toBe(200);
      expect(res.body.status).toBe(status);
    }
    const dropped = await engine.request('POST', '/v1/actions', { key: t.key, body: { action: 'db.query', params: { sql: 'DROP TABLE users' } } });
    expect(dropped.status, dropped.text).toBe(403);
    expect(dropped.body).toMatchObject({ status: 'blocked', code: 'BLOCKED' });
  });

  it('counts enabled policies against the tier under the policies lock, with the route’s code', async () => {
    const t = await engine.newTenant('starter'); // five enabled custom policies
    const enabled = Array.from({ length: 6 }, () => policy({}));
    const disabled = policy({ enabled: false });
    const result = await importBundle(t, bundle([disabled, ...enabled]));
    expect(result.stored.policy).toBe(6);
    expect(result.errors).toEqual([expect.objectContaining({ line: 8, code: 'svc_ram.v1.tier.limit_exceeded' })]);
    const counts = await engine.sql<{ enabled: boolean; n: string }>(
      sql`SELECT enabled, count(*) AS n FROM policies WHERE tenant_id = ${t.tenantId} GROUP BY enabled ORDER BY enabled`,
    );
    expect(counts.map((c) => [c.enabled, Number(c.n)])).toEqual([
      [false, 1],
      [true, 5],
    ]);
  });

  it('audits each restored record, gives spaces and triples v7 ids, restores packs before the agents naming them', async () => {
    const t = await engine.newTenant('enterprise');
    const result = await importBundle(
      t,
      bundle([
        { type: 'space', id: 'urn:uuid:0193a0a0-0000-7000-8000-0000000000a1', name: 'research', tags: ['science'], allowed_agent_ids: [] },
        { type: 'agent', agent_id: 'release-bot', name: 'Release bot', provider: 'openai', model: 'gpt-4.1', capabilities: ['gh'], status: 'paused' },
        { type: 'pack', id: 'cap_x', name: 'gh', tools: [{ name: 'github.comment', description: 'Comment' }], risk_levels: { 'github.comment': 'low' } },
        policy({ name: 'Audited' }),
        { type: 'triple', id: 'urn:uuid:0193a0a0-0000-7000-8000-0000000000a2', subject: { name: 'ada' }, predicate: 'wrote', object: { name: 'notes' } },
      ]),
    );
    expect(result.errors).toEqual([]);
    expect(result.stored).toMatchObject({ space: 1, agent: 1, pack: 1, policy: 1, triple: 1 });
    const ops = await engine.sql<{ operation: string }>(sql`SELECT operation FROM audit_log WHERE tenant_id = ${t.tenantId} ORDER BY seq`);
    expect(ops.map((o) => o.operation)).toEqual(
      expect.arrayContaining(['space.created', 'capability.created', 'agent.created', 'agent.updated', 'policy.created', 'knowledge.triple_created']),
    );
    const [space] = await engine.sql<{ id: string }>(sql`SELECT id FROM context_spaces WHERE owner_tenant_id = ${t.tenantId}`);
    const [triple] = await engine.sql<{ id: string }>(sql`SELECT id FROM knowledge_triples WHERE tenant_id = ${t.tenantId}`);
    for (const id of [space.id, triple.id]) expect(id[14]).toBe('7');
    const agent = await engine.request('GET', '/v1/agents/release-bot', { key: t.key });
    expect(agent.body).toMatchObject({ status: 'paused', capabilities: ['gh'] });
  });

  it('needs the write scope of every kind it restores: a line the key may not create is refused alone', async () => {
    const t = await engine.newTenant('enterprise');
    const mint = async (scopes: string[]) => {
      const res = await engine.request('POST', '/v1/keys/restricted', { key: t.key, body: { name: scopes.join(' '), scopes } });
      expect(res.status, res.text).toBe(201);
      return res.body.api_key as string;
    };
    const file = bundle([
      { type: 'space', id: 'urn:uuid:0193a0a0-0000-7000-8000-0000000000b1', name: 'scoped' },
      { type: 'agent', agent_id: 'scoped-bot', name: 'Bot', provider: 'openai', model: 'gpt-4.1' },
      policy({ name: 'Scoped' }),
      { type: 'memory', id: 'urn:uuid:0193a0a0-0000-7000-8000-0000000000b2', text: 'A scoped memory.' },
    ]);
    const only = await importBundle(t, file, await mint(['portability:write']));
    expect(Object.values(errorsByLine(only))).toEqual(['FORBIDDEN', 'FORBIDDEN', 'FORBIDDEN', 'FORBIDDEN']);
    expect(only.errors[2].message).toContain('policies:write');
    expect(Object.values(only.stored).every((v) => v === 0)).toBe(true);

    const withPolicies = await importBundle(t, file, await mint(['portability:write', 'policies:write']));
    expect(withPolicies.stored.policy).toBe(1);
    expect(withPolicies.errors.map((e) => e.line)).toEqual([2, 3, 5]);
  });

  it('an escaped NUL or lone surrogate anywhere in a line is that line’s INVALID_TEXT', async () => {
    const t = await engine.newTenant('enterprise');
    const lines = [
      { type: 'memory', id: 'urn:uuid:0193a0a0-0000-7000-8000-0000000000c1', text: 'nul \u0000 inside' },
      { type: 'memory', id: 'urn:uuid:0193a0a0-0000-7000-8000-0000000000c2', text: 'fine', context: 'lone \ud800 surrogate' },
      policy({ description: 'nul \u0000 in a policy' }),
      {
        type: 'triple',
        id: 'urn:uuid:0193a0a0-0000-7000-8000-0000000000c3',
        subject: { name: 'a' },
        predicate: 'p',
        object: { name: 'b' },
        metadata: { k: '\u0000' },
      },
      { type: 'memory', id: 'urn:uuid:0193a0a0-0000-7000-8000-0000000000c4', text: 'A clean memory.' },
    ];
    const result = await importBundle(t, bundle(lines));
    expect(errorsByLine(result)).toEqual({ 2: 'INVALID_TEXT', 3: 'INVALID_TEXT', 4: 'INVALID_TEXT', 5: 'INVALID_TEXT' });
    expect(result.stored.memory).toBe(1);

    const jsonl = await engine.request('POST', '/v1/import?format=jsonl', {
      key: t.key,
      raw: `${JSON.stringify({ observation: 'x\u0000y' })}\n${JSON.stringify({ observation: 'Clean JSONL.' })}\n`,
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(jsonl.status, jsonl.text).toBe(200);
    expect(jsonl.body).toMatchObject({ stored: { memory: 1 }, errors: [{ line: 1, code: 'INVALID_TEXT' }] });

    // The error names the key, and a key may itself hold a NUL or a lone surrogate: still that line's error, not a 500.
    const keyed = await engine.request('POST', '/v1/import?format=jsonl', {
      key: t.key,
      raw: `${JSON.stringify({ observation: 'Bad key.', 'k\u0000\ud800': 1 })}\n${JSON.stringify({ observation: 'Clean key.' })}\n`,
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(keyed.status, keyed.text).toBe(200);
    expect(keyed.body).toMatchObject({ stored: { memory: 1 }, errors: [{ line: 1, code: 'INVALID_TEXT' }] });
    expect((keyed.body as { errors: { message: string }[] }).errors[0].message).toContain('k\ufffd\ufffd');
  });
});

describe('a dry run hears what the verbs refuse', () => {
  it('lists the refusals a real import would (bad pattern, the cap, an unknown pack) and writes nothing', async () => {
    const t = await engine.newTenant('starter'); // five enabled custom policies
    const file = bundle([
      policy({ rules: [{ match: '(?<=a)b(', severity: 'high' }] }),
      ...Array.from({ length: 6 }, () => policy({})),
      { type: 'agent', agent_id: 'lost-bot', name: 'Lost', provider: 'openai', model: 'gpt-4.1', capabilities: ['nope'] },
      // Named by the agent below it: a pack is restored before the agents, in a dry run too.
      { type: 'agent', agent_id: 'gh-bot', name: 'GH', provider: 'openai', model: 'gpt-4.1', capabilities: ['gh'] },
      { type: 'pack', id: 'cap_dry', name: 'gh', tools: [{ name: 'github.comment', description: 'Comment' }], risk_levels: { 'github.comment': 'low' } },
    ]);
    const seqBefore = await engine.sql<{ n: string }>(sql`SELECT count(*) AS n FROM audit_log WHERE tenant_id = ${t.tenantId}`);
    const dry = await engine.request('POST', '/v1/import?format=bundle&dry_run=true', {
      key: t.key,
      raw: file,
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(dry.status, dry.text).toBe(200);
    const expected = [
      { line: 2, code: 'svc_ram.v1.control.invalid_policy' },
      { line: 8, code: 'svc_ram.v1.tier.limit_exceeded' },
      { line: 9, code: 'NOT_FOUND' },
    ];
    const codes = (s: Summary) => s.errors.map(({ line, code }) => ({ line, code }));
    expect(codes(dry.body as unknown as Summary)).toEqual(expected);
    expect(dry.body).toMatchObject({ dry_run: true, failed: 3, invalid: 3, stored: { policy: 0, agent: 0, pack: 0 } });
    for (const table of ['policies', 'runtime_agents', 'runtime_capabilities']) {
      const [{ n }] = await engine.sql<{ n: string }>(sql`SELECT count(*) AS n FROM ${sql.raw(table)} WHERE tenant_id = ${t.tenantId}`);
      expect(Number(n), table).toBe(0);
    }
    const seqAfter = await engine.sql<{ n: string }>(sql`SELECT count(*) AS n FROM audit_log WHERE tenant_id = ${t.tenantId}`);
    expect(seqAfter).toEqual(seqBefore);
    // The real import refuses the same lines.
    expect(codes(await importBundle(t, file))).toEqual(expected);
  });
});

describe('erased ids stay erased', () => {
  const remember = async (t: Tenant, observation: string) => {
    const res = await engine.request('POST', '/v1/memories', { key: t.key, body: { observation, auto_link: false } });
    expect(res.status, res.text).toBe(201);
    return res.body.id as string;
  };
  const erase = async (t: Tenant, ids: string[]) => {
    const res = await engine.request('POST', '/v1/erasures', { key: t.key, body: { memory_ids: ids, reason: 'asked' } });
    expect(res.status, res.text).toBe(201);
  };
  const texts = async (t: Tenant) =>
    (await engine.sql<{ observation: string }>(sql`SELECT observation FROM memories WHERE tenant_id = ${t.tenantId} ORDER BY observation`)).map(
      (m) => m.observation,
    );

  it('a bundle exported before an erasure does not bring the erased memory back', async () => {
    const t = await engine.newTenant('pro');
    const secret = await remember(t, 'Door code 4321.');
    await remember(t, 'The office opens at nine.');
    const file = (await engine.request('GET', '/v1/export/bundle', { key: t.key })).text;
    await erase(t, [secret]);
    const dry = await engine.request('POST', '/v1/import?format=bundle&dry_run=true', {
      key: t.key,
      raw: file,
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(dry.body).toMatchObject({ erased: 1, staged: 1 });
    const result = await importBundle(t, file);
    expect(result).toMatchObject({ erased: 1, stored: { memory: 1 }, already_imported: 0 });
    expect(await texts(t)).not.toContain('Door code 4321.');
  });

  it('nor does a file whose memory an earlier import stored and an erasure then removed', async () => {
    const t = await engine.newTenant('pro');
    const file = bundle([{ type: 'memory', id: 'urn:uuid:0193a0a0-0000-7000-8000-0000000000d1', text: 'Imported secret.' }]);
    expect((await importBundle(t, file)).stored.memory).toBe(1);
    const [stored] = await engine.sql<{ id: string }>(sql`SELECT id FROM memories WHERE tenant_id = ${t.tenantId}`);
    await erase(t, [stored.id]);
    expect(await importBundle(t, file)).toMatchObject({ erased: 1, stored: { memory: 0 } });
    expect(await texts(t)).toEqual([]);
  });
});
