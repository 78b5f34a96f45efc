import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type Tenant, type TestEngine } from './harness';
import { tablesHolding } from './tables-holding';

/**
 * GET /v1/export/bundle and POST /v1/import (docs/portability.md): a whole account round-trips
 * into a fresh engram field by field; JSONL and mem0 files import; a second import stores nothing;
 * a dry run writes nothing; a truncated or edited bundle is refused before anything is written.
 */
let engine: TestEngine;
let fresh: TestEngine;
/** Stores files of more than 40 lines by a job, as a default engram does past 10,000. */
let jobs: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
  fresh = await createEngine({ ownDatabase: true });
  jobs = await createEngine({ env: { IMPORT_INLINE_MAX_LINES: '40' } });
});
afterAll(async () => {
  await engine.close();
  await fresh.close();
  await jobs.close();
});

type Summary = {
  lines: number;
  valid: number;
  invalid: number;
  stored: Record<string, number>;
  already_imported: number;
  duplicates: number;
  skipped: { webhook: number };
  failed: number;
  errors: { line: number; code: string; message: string }[];
};

const ok = async (res: Promise<{ status: number; text: string; body: unknown }>, status = 201) => {
  const r = await res;
  expect(r.status, r.text).toBe(status);
  return r.body as Record<string, unknown>;
};

const importFile = async (e: TestEngine, t: Tenant, format: string, file: string, dryRun = false) =>
  e.request('POST', `/v1/import?format=${format}&dry_run=${dryRun}`, { key: t.key, raw: file, headers: { 'content-type': 'application/x-ndjson' } });

const imported = async (e: TestEngine, t: Tenant, format: string, file: string, dryRun = false) => {
  const res = await importFile(e, t, format, file, dryRun);
  expect(res.status, res.text).toBe(200);
  return res.body as unknown as Summary;
};

const memoriesOf = async (e: TestEngine, t: Tenant) =>
  e.sql<{ observation: string; tags: string[]; importance: number; context: string | null; agent_id: string | null; space: string | null }>(
    sql`SELECT m.observation, m.tags, m.importance, m.context, m.agent_id, s.name AS space
        FROM memories m LEFT JOIN context_spaces s ON s.id = m.space_id WHERE m.tenant_id = ${t.tenantId} ORDER BY m.observation`,
  );
const countOf = async (e: TestEngine, t: Tenant) =>
  Number((await e.sql<{ n: string }>(sql`SELECT count(*) AS n FROM memories WHERE tenant_id = ${t.tenantId}`))[0].n);
const bundleOf = async (t: Tenant) => {
  const res = await engine.request('GET', '/v1/export/bundle', { key: t.key });
  expect(res.status, res.text).toBe(200);
  expect(res.headers.get('content-type')).toContain('application/x-ndjson');
  return res.text;
};

async function populate(t: Tenant) {
  const call = (method: string, path: string, body?: unknown) => engine.request(method, path, { key: t.key, body });
  const space = await ok(call('POST', '/v1/context-spaces', { name: 'research', description: 'Papers', tags: ['science'] }));
  await ok(
    call('POST', '/v1/memories', {
      observation: 'The user prefers invoices in EUR.',
      tags: ['billing', 'prefs'],
      importance: 8,
      agent_id: 'billing-bot',
      auto_link: false,
    }),
  );
  await ok(
    call('POST', '/v1/memories', {
      observation: 'Transformers scale with data.',
      tags: ['ml'],
      importance: 6,
      space_id: space.id,
      context: 'reading group',
      auto_link: false,
    }),
  );
  await ok(call('POST', '/v1/memories', { observation: 'The office opens at nine.', auto_link: false }));
  await ok(call('POST', '/v1/knowledge/triples', { subject: 'Ada Lovelace', predicate: 'wrote', object: 'Notes on the Analytical Engine' }));
  await ok(
    call('POST', '/v1/control/policies', {
      name: 'NoProdDrops',
      description: 'Hold destructive SQL',
      rules: [{ match: String.raw`\bdrop\s+table\b`, severity: 'high', reason: 'Destructive SQL: {match}' }],
    }),
  );
  await ok(
    call('POST', '/v1/agents', { agent_id: 'release-bot', name: 'Release bot', provider: 'openai', model: 'gpt-4.1', instructions: 'Never push to main.' }),
  );
  await ok(call('POST', '/v1/webhooks', { url: 'https://hooks.example.com/engram', events: ['memory.created'] }));
  const erased = await ok(call('POST', '/v1/memories', { observation: 'Erase me: door code 1234.', auto_link: false }));
  await ok(call('POST', '/v1/erasures', { memory_ids: [erased.id], reason: 'test' }));
}

describe('GET /v1/export/bundle', () => {
  it('streams a header with counts, one line per record, and a trailer whose hash covers every line before it', async () => {
    const t = await engine.newTenant('enterprise');
    await populate(t);
    const text = await bundleOf(t);
    expect(text.endsWith('\n')).toBe(true);
    const lines = text.slice(0, -1).split('\n');
    const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(records[0]).toMatchObject({
      type: 'header',
      format: 'engram-bundle',
      version: 1,
      counts: { memory: 3, space: 1, triple: 1, policy: 1, agent: 1, webhook: 1 },
    });
    const trailer = records.at(-1)!;
    expect(trailer.type).toBe('trailer');
    expect(trailer.lines).toBe(lines.length - 1);
    const before = text.slice(0, text.length - lines.at(-1)!.length - 1);
    const digest = Buffer.from(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(before))).toString('hex');
    expect(trailer.sha256).toBe(digest);
    expect(text).not.toContain('door code 1234');
    const webhook = records.find((r) => r.type === 'webhook')!;
    expect(webhook.url).toBe('https://hooks.example.com/engram');
    expect(JSON.stringify(webhook)).not.toMatch(/secret/);
    const memory = records.find((r) => r.type === 'memory' && r.text === 'The user prefers invoices in EUR.')!;
    expect(memory).toMatchObject({ tags: ['billing', 'prefs'], importance: 8, agent_id: 'billing-bot', space_id: null });

    const other = await engine.newTenant('enterprise');
    const theirs = (await bundleOf(other)).trim().split('\n');
    expect(theirs).toHaveLength(2);
    expect(JSON.parse(theirs[0]).counts.memory).toBe(0);
  });
});

describe('POST /v1/import?format=bundle', () => {
  it('restores the account into a fresh engram field by field, and a second import stores nothing', async () => {
    const t = await engine.newTenant('enterprise');
    await populate(t);
    const file = await bundleOf(t);
    const target = await fresh.newTenant('enterprise');

    const dry = await imported(fresh, target, 'bundle', file, true);
    expect(dry).toMatchObject({ invalid: 0, skipped: { webhook: 1 }, stored: { memory: 0 } });
    expect(await countOf(fresh, target)).toBe(0);

    const first = await imported(fresh, target, 'bundle', file);
    expect(first.errors).toEqual([]);
    expect(first.stored).toMatchObject({ memory: 3, space: 1, triple: 1, policy: 1, agent: 1, webhook: 0 });
    expect(first.skipped.webhook).toBe(1);
    expect(await memoriesOf(fresh, target)).toEqual(await memoriesOf(engine, t));

    const call = (path: string) => fresh.request('GET', path, { key: target.key });
    const policy = (await call('/v1/control/policies/NoProdDrops')).body as Record<string, unknown>;
    expect(policy).toMatchObject({ name: 'NoProdDrops', description: 'Hold destructive SQL' });
    const agent = (await call('/v1/agents/release-bot')).body as Record<string, unknown>;
    expect(agent).toMatchObject({ name: 'Release bot', provider: 'openai', model: 'gpt-4.1', instructions: 'Never push to main.' });
    const triples = await fresh.sql<{ s: string; p: string; o: string }>(
      sql`SELECT s.name AS s, k.predicate AS p, o.name AS o FROM knowledge_triples k JOIN knowledge_entities s ON s.id = k.subject_id JOIN knowledge_entities o ON o.id = k.object_id WHERE k.tenant_id = ${target.tenantId}`,
    );
    const original = await engine.sql<{ s: string; p: string; o: string }>(
      sql`SELECT s.name AS s, k.predicate AS p, o.name AS o FROM knowledge_triples k JOIN knowledge_entities s ON s.id = k.subject_id JOIN knowledge_entities o ON o.id = k.object_id WHERE k.tenant_id = ${t.tenantId}`,
    );
    expect(triples).toEqual(original);

    const again = await imported(fresh, target, 'bundle', file);
    expect(again.stored).toMatchObject({ memory: 0, space: 0, triple: 0, policy: 0, agent: 0 });
    expect(again.already_imported).toBe(7);
    expect(await countOf(fresh, target)).toBe(3);

    // Another tenant of the fresh engram sees none of it.
    const stranger = await fresh.newTenant('enterprise');
    expect(((await fresh.request('GET', '/v1/memories', { key: stranger.key })).body as { memories: unknown[] }).memories).toEqual([]);
  });

  it('refuses a truncated bundle, an edited one and one without a trailer, writing nothing', async () => {
    const t = await engine.newTenant('enterprise');
    await populate(t);
    const file = await bundleOf(t);
    const target = await engine.newTenant('enterprise');
    const lines = file.slice(0, -1).split('\n');
    const truncated = `${lines.slice(0, -2).join('\n')}\n`;
    const tampered = file.replace('The office opens at nine.', 'The office opens at ten.');
    const cut = file.slice(0, Math.floor(file.length / 2));
    for (const bad of [truncated, tampered, cut, `${lines.slice(0, -1).join('\n')}\n`]) {
      for (const dryRun of [true, false]) {
        const res = await importFile(engine, target, 'bundle', bad, dryRun);
        expect(res.status, res.text).toBe(422);
        expect((res.body as { code: string }).code).toBe('BUNDLE_INTEGRITY_FAILED');
      }
    }
    expect(await countOf(engine, target)).toBe(0);
    expect(await engine.sql(sql`SELECT 1 FROM import_sources WHERE tenant_id = ${target.tenantId}`)).toEqual([]);
    expect(await engine.sql(sql`SELECT 1 FROM import_lines WHERE tenant_id = ${target.tenantId}`)).toEqual([]);
    expect(await engine.sql(sql`SELECT 1 FROM imports WHERE tenant_id = ${target.tenantId}`)).toEqual([]);
  });
});

describe('POST /v1/import?format=jsonl and mem0', () => {
  it('imports JSONL lines, reports bad lines by number, and skips what it imported before', async () => {
    const t = await engine.newTenant('pro');
    const file = [
      JSON.stringify({ observation: 'Alpha fact.', tags: ['a'], importance: 7 }),
      '{not json',
      JSON.stringify({ text: 'Beta fact.', agent_id: 'bot' }),
      JSON.stringify({ tags: ['no text'] }),
      JSON.stringify({ observation: 'Gamma fact.', importance: 42 }),
      JSON.stringify({ id: 'urn:uuid:0193a0a0-0000-7000-8000-000000000001', observation: 'Delta fact.' }),
      '',
    ].join('\n');
    const dry = await imported(engine, t, 'jsonl', file, true);
    expect(dry.errors.map((e) => [e.line, e.code])).toEqual([
      [2, 'INVALID_JSON'],
      [4, 'INVALID_RECORD'],
      [5, 'INVALID_RECORD'],
    ]);
    expect(dry.valid).toBe(3);
    expect(await countOf(engine, t)).toBe(0);

    const first = await imported(engine, t, 'jsonl', file);
    expect(first.stored.memory).toBe(3);
    expect(first.errors.map((e) => e.line)).toEqual([2, 4, 5]);
    expect((await memoriesOf(engine, t)).map((m) => [m.observation, m.importance, m.agent_id])).toEqual([
      ['Alpha fact.', 7, null],
      ['Beta fact.', 5, 'bot'],
      ['Delta fact.', 5, null],
    ]);
    const second = await imported(engine, t, 'jsonl', file);
    expect(second.stored.memory).toBe(0);
    expect(second.already_imported).toBe(3);
    expect(await countOf(engine, t)).toBe(3);
  });

  it('imports the JSON export of GET /v1/memories/export as JSONL lines', async () => {
    const source = await engine.newTenant('pro');
    await ok(
      engine.request('POST', '/v1/memories', { key: source.key, body: { observation: 'Exported fact.', tags: ['x'], importance: 9, auto_link: false } }),
    );
    const exported = (await engine.request('GET', '/v1/memories/export?format=json', { key: source.key })).text;
    const items = JSON.parse(exported) as unknown[];
    const t = await engine.newTenant('pro');
    const result = await imported(engine, t, 'jsonl', items.map((i) => JSON.stringify(i)).join('\n'));
    expect(result.stored.memory).toBe(1);
    expect((await memoriesOf(engine, t))[0]).toMatchObject({ observation: 'Exported fact.', tags: ['x'], importance: 9 });
  });

  it('imports a mem0 export ({results} or a bare array), once', async () => {
    const t = await engine.newTenant('pro');
    const results = [
      {
        id: 'f1b8c2a0-0000-4000-8000-000000000001',
        memory: 'Likes green tea',
        user_id: 'alice',
        agent_id: null,
        metadata: { source: 'chat' },
        categories: ['food'],
        created_at: '2025-01-02T03:04:05Z',
      },
      { id: 'f1b8c2a0-0000-4000-8000-000000000002', memory: 'Lives in Lisbon', user_id: 'alice', metadata: {} },
      { id: 'f1b8c2a0-0000-4000-8000-000000000003', memory: 17 },
    ];
    const first = await imported(engine, t, 'mem0', JSON.stringify({ results }));
    expect(first.stored.memory).toBe(2);
    expect(first.errors).toEqual([{ line: 3, code: 'INVALID_RECORD', message: 'memory must be a string' }]);
    const rows = await memoriesOf(engine, t);
    expect(rows.find((m) => m.observation === 'Likes green tea')).toMatchObject({ tags: ['food', 'user:alice'], context: '{"source":"chat"}' });
    const again = await imported(engine, t, 'mem0', JSON.stringify(results));
    expect(again).toMatchObject({ stored: { memory: 0 }, already_imported: 2 });
    expect((await importFile(engine, t, 'mem0', '{"nope": 1}')).status).toBe(400);
  });

  it('answers 413 past 100 MB and writes nothing', async () => {
    const t = await engine.newTenant('pro');
    const line = `${JSON.stringify({ observation: 'x'.repeat(1000) })}\n`;
    const big = line.repeat(Math.ceil((100 * 1024 * 1024) / line.length) + 10);
    const res = await importFile(engine, t, 'jsonl', big);
    expect(res.status).toBe(413);
    expect((res.body as { code: string }).code).toBe('PAYLOAD_TOO_LARGE');
    expect(await countOf(engine, t)).toBe(0);
  });
});

describe('large imports run as a job', () => {
  type Import = Summary & { id: string; status: string; staged: number; processed: number; erased: number; completed_at: string | null };
  const lines = (n: number, text: (i: number) => string, tags: string[]) =>
    Array.from({ length: n }, (_, i) => JSON.stringify({ observation: text(i), tags })).join('\n');
  const start = async (t: Tenant, file: string) => {
    const res = await importFile(jobs, t, 'jsonl', file);
    expect(res.status, res.text).toBe(202);
    return res.body as unknown as Import;
  };
  const importOf = async (t: Tenant, id: string) => {
    const res = await jobs.request('GET', `/v1/imports/${id}`, { key: t.key });
    expect(res.status, res.text).toBe(200);
    return res.body as unknown as Import;
  };

  it('answers 202, stores every line in slices with progress events, and reports through GET /v1/imports/{id}', async () => {
    const t = await jobs.newTenant('pro');
    const file = `${lines(1_100, (i) => `Imported fact ${i}.`, ['bulk'])}\n{broken\n${JSON.stringify({ observation: 'Imported fact 0.' })}`;
    const accepted = await start(t, file);
    expect(accepted).toMatchObject({ status: 'running', lines: 1_102, valid: 1_101, staged: 1_100, duplicates: 1, invalid: 1, completed_at: null });
    expect(accepted.id).toMatch(/^imp_/);
    expect(accepted.errors).toEqual([{ line: 1_101, code: 'INVALID_JSON', message: 'the line is not JSON' }]);

    await jobs.node.runner.drain();
    const done = await importOf(t, accepted.id);
    expect(done).toMatchObject({ status: 'completed', processed: 1_100, stored: { memory: 1_100 }, failed: 0, errors_total: 1 });
    expect(done.completed_at).not.toBeNull();
    expect(await countOf(jobs, t)).toBe(1_100);
    expect(await jobs.sql(sql`SELECT 1 FROM import_lines WHERE tenant_id = ${t.tenantId}`)).toEqual([]);

    const events = await jobs.sql<{ type: string; payload: { data: Record<string, number> } }>(
      sql`SELECT type, payload FROM events WHERE tenant_id = ${t.tenantId} AND type LIKE 'import.%' ORDER BY seq`,
    );
    expect(events.map((e) => e.type)).toEqual(['import.progress', 'import.completed']);
    expect(events[0].payload.data).toMatchObject({ import_id: accepted.id, processed: 1_000, staged: 1_100 });
    expect(events[1].payload.data).toMatchObject({ import_id: accepted.id, stored: { memory: 1_100 } });
    const audit = await jobs.request('GET', '/v1/audit?limit=5', { key: t.key });
    expect(audit.body.entries.map((e: { operation: string }) => e.operation)).toContain('import.completed');

    const list = await jobs.request('GET', '/v1/imports', { key: t.key });
    expect(list.body).toMatchObject({ total: 1, imports: [{ id: accepted.id, status: 'completed' }] });
    const stranger = await jobs.newTenant('pro');
    expect((await jobs.request('GET', `/v1/imports/${accepted.id}`, { key: stranger.key })).status).toBe(404);
    expect(((await jobs.request('GET', '/v1/imports', { key: stranger.key })).body as { total: number }).total).toBe(0);

    // The same file again: nothing new, by a job as well.
    const again = await start(t, file);
    await jobs.node.runner.drain();
    expect(await importOf(t, again.id)).toMatchObject({ status: 'completed', already_imported: 1_100, stored: { memory: 0 } });
  });

  it('an erasure racing an import leaves no content behind: stored lines are erased, staged ones dropped', async () => {
    const t = await jobs.newTenant('pro');
    const accepted = await start(
      t,
      lines(600, (i) => `Racing import secret ${i}`, ['race']),
    );
    const erasure = await jobs.request('POST', '/v1/erasures', { key: t.key, body: { tags: ['race'], reason: 'racing an import' } });
    expect(erasure.status, erasure.text).toBe(201);
    await jobs.node.runner.drain();
    const done = await importOf(t, accepted.id);
    expect(done.status).toBe('completed');
    expect(done.processed).toBe(600);
    expect(done.stored.memory + done.erased).toBe(600);
    expect(erasure.body.counts.import_lines).toBe(done.erased);
    // What the import stored after the erasure is new; erase it too and nothing of the file is left.
    expect((await jobs.request('POST', '/v1/erasures', { key: t.key, body: { tags: ['race'], reason: 'again' } })).status).toBe(201);
    expect(await tablesHolding(jobs, 'Racing import secret')).toEqual([]);
    expect((await jobs.request('GET', '/v1/audit/verify', { key: t.key })).body.valid).toBe(true);
  });

  it('an erasure names staged lines as well as stored ones; an account deletion drops the import', async () => {
    const t = await jobs.newTenant('pro');
    const accepted = await start(t, `${lines(50, (i) => `Staged secret ${i}`, ['staged'])}\n${lines(10, (i) => `Kept fact ${i}`, ['kept'])}`);
    // The job may store its one chunk before or after either call: every line is counted once, staged or stored.
    const sum = (c: Record<string, number>) => c.memories + c.import_lines;
    const dry = await jobs.request('POST', '/v1/erasures', { key: t.key, body: { tags: ['staged'], reason: 'r', dry_run: true } });
    expect(sum(dry.body.counts)).toBe(50);
    const erasure = await jobs.request('POST', '/v1/erasures', { key: t.key, body: { tags: ['staged'], reason: 'r' } });
    expect(sum(erasure.body.counts)).toBe(50);
    expect(await tablesHolding(jobs, 'Staged secret')).toEqual([]);
    await jobs.node.runner.drain();
    expect(await tablesHolding(jobs, 'Staged secret')).toEqual([]);
    const done = await importOf(t, accepted.id);
    expect(done).toMatchObject({ status: 'completed', erased: erasure.body.counts.import_lines, processed: 60 });
    expect(await countOf(jobs, t)).toBe(10);

    const u = await jobs.newTenant('pro');
    await start(
      u,
      lines(45, (i) => `Account secret ${i}`, []),
    );
    const gone = await jobs.request('DELETE', '/v1/account', { key: u.key, body: { confirm: u.email } });
    expect(gone.status, gone.text).toBe(200);
    await jobs.node.runner.drain();
    expect(await tablesHolding(jobs, 'Account secret')).toEqual([]);
    expect(await jobs.sql(sql`SELECT 1 FROM imports WHERE tenant_id = ${u.tenantId}`)).toEqual([]);
  });
});
