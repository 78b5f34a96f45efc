import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, errorOf, type Tenant, type TestEngine } from './harness';
import { withMemoryDeletedOnFirstInsert } from './races';

let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const store = (t: Tenant, body: Record<string, unknown>) => engine.request('POST', '/v1/memories', { key: t.key, body });

async function eventsOf(tenantId: string) {
  const res = await engine.sql<{ kind: string; memory_id: string; before: any; after: any; has_embedding: boolean; uses_row_vector: boolean }>(
    sql`SELECT kind, memory_id::text AS memory_id, before, after, (embedding IS NOT NULL OR embedding_live) AS has_embedding,
        (kind <> 'create' OR (embedding_live AND embedding IS NULL)) AS uses_row_vector FROM memory_events WHERE tenant_id = ${tenantId} ORDER BY id`,
  );
  return res;
}

async function auditOps(tenantId: string) {
  const res = await engine.sql<{ operation: string }>(sql`SELECT operation FROM audit_log WHERE tenant_id = ${tenantId} ORDER BY seq`);
  return res.map((r) => r.operation);
}

describe('store', () => {
  it('stores with defaults and returns id, hash, created_at, conflict flag and links', async () => {
    const t = await engine.newTenant();
    const res = await store(t, { observation: 'The user prefers invoices in EUR.' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ conflict_detected: false, auto_links: [], superseded: [], expires_at: null });
    expect(res.body.id).toMatch(/^urn:uuid:[0-9a-f-]{36}$/);
    const { createHash } = await import('node:crypto');
    expect(res.body.hash).toBe(createHash('sha256').update('The user prefers invoices in EUR.').digest('hex'));

    const got = await engine.request('GET', `/v1/memories/${res.body.id}`, { key: t.key });
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({
      uuid: res.body.id,
      observation: 'The user prefers invoices in EUR.',
      tags: [],
      importance: 5,
      confidence: 1,
      recall_count: 0,
      last_recalled_at: null,
      superseded_by: null,
      space_id: null,
      hash: res.body.hash,
      created_at: res.body.created_at,
    });

    const events = await eventsOf(t.tenantId);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ kind: 'create', has_embedding: true, uses_row_vector: true });
    expect(events[0].after.observation).toBe('The user prefers invoices in EUR.');
    expect(await auditOps(t.tenantId)).toContain('memory.create');
    const milestones = await engine.request('GET', '/v1/milestones', { key: t.key });
    expect(milestones.body.milestones.map((m: { milestone: string }) => m.milestone)).toContain('first_memory');
    const usage = await engine.request('GET', '/v1/usage', { key: t.key });
    expect(usage.body.memories.current).toBe(1);
    expect((await engine.request('GET', '/v1/dashboard', { key: t.key })).body.memory_count).toBe(1);
    const jobs = await engine.sql<{ type: string }>(sql`SELECT type FROM events WHERE tenant_id = ${t.tenantId} ORDER BY seq`);
    expect(jobs.map((r) => r.type)).toEqual(['memory.created']);
  });

  it('rejects bad input with 400 naming the field', async () => {
    const t = await engine.newTenant();
    const cases: [Record<string, unknown>, string][] = [
      [{ observation: '' }, 'observation'],
      [{ observation: '   ' }, 'observation'],
      [{ observation: 'x'.repeat(100_000) }, 'observation'],
      [{}, 'observation'],
      [{ observation: 'ok', importance: 0 }, 'importance'],
      [{ observation: 'ok', importance: 11 }, 'importance'],
      [{ observation: 'ok', importance: 5.5 }, 'importance'],
      [{ observation: 'ok', ttl_seconds: 59 }, 'ttl_seconds'],
      [{ observation: 'ok', ttl_seconds: 7_776_001 }, 'ttl_seconds'],
      [{ observation: 'ok', on_conflict: 'merge' }, 'on_conflict'],
      [{ observation: 'ok', tags: [1, 2] }, 'tags.0'],
      [{ observation: 'ok', tags: 'a,b' }, 'tags'],
      [{ observation: 'ok', auto_link: 'yes' }, 'auto_link'],
    ];
    for (const [body, field] of cases) {
      const res = await store(t, body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(errorOf(res).code).toBe('VALIDATION_ERROR');
      expect(errorOf(res).details?.map((d: { path: string }) => d.path)).toContain(field);
    }
  });

  it('space_id needs Pro+ (403 with required tier); a malformed or foreign space id is 400', async () => {
    const free = await engine.newTenant('free');
    const refused = await store(free, { observation: 'x', space_id: 'urn:uuid:01935f6e-8a2b-7c3d-9e4f-5a6b7c8d9e0f' });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'FEATURE_NOT_AVAILABLE', required_tier: 'pro', current_tier: 'free' });
    const pro = await engine.newTenant('pro');
    const malformed = await store(pro, { observation: 'x', space_id: 'space-1' });
    expect(malformed.status).toBe(400);
    expect(errorOf(malformed).details?.[0].path).toBe('space_id');
    const unknown = await store(pro, { observation: 'x', space_id: 'urn:uuid:01935f6e-8a2b-7c3d-9e4f-5a6b7c8d9e0f' });
    expect(unknown.status).toBe(400);
    expect(errorOf(unknown).details?.[0].path).toBe('space_id');
  });
});

describe('conflicts', () => {
  it('lww supersedes the older duplicate; reject answers 409; manual keeps both', async () => {
    const t = await engine.newTenant();
    const first = await store(t, { observation: 'Deploys happen on Tuesdays.' });
    const second = await store(t, { observation: 'Deploys happen on Tuesdays.' });
    expect(second.status).toBe(201);
    expect(second.body.conflict_detected).toBe(true);
    expect(second.body.superseded).toEqual([first.body.id]);
    const older = await engine.request('GET', `/v1/memories/${first.body.id}`, { key: t.key });
    expect(older.body.superseded_by).toBe(second.body.id);

    const rejected = await store(t, { observation: 'Deploys happen on Tuesdays.', on_conflict: 'reject' });
    expect(rejected.status).toBe(409);
    expect(errorOf(rejected).code).toBe('CONFLICT');
    expect(errorOf(rejected).existing_ids).toEqual([second.body.id]);

    const manual = await store(t, { observation: 'Deploys happen on Tuesdays.', on_conflict: 'manual' });
    expect(manual.body).toMatchObject({ conflict_detected: true, superseded: [] });
    const list = await engine.request('GET', '/v1/memories', { key: t.key });
    expect(list.body.total).toBe(3);
  });

  it('concurrent identical stores with reject: exactly one succeeds', async () => {
    const t = await engine.newTenant();
    const results = await Promise.all(Array.from({ length: 5 }, () => store(t, { observation: 'Only once, please.', on_conflict: 'reject' })));
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(4);
  });

  it('concurrent identical stores with lww: each supersedes the one current before it, one stays current', async () => {
    const t = await engine.newTenant();
    const results = await Promise.all(Array.from({ length: 12 }, () => store(t, { observation: 'The build is green.', on_conflict: 'lww' })));
    expect(results.map((r) => r.status)).toEqual(Array(12).fill(201));
    const superseded = results.flatMap((r) => r.body.superseded as string[]);
    expect(superseded).toHaveLength(11);
    expect(new Set(superseded).size).toBe(11);
    expect(results.filter((r) => !superseded.includes(r.body.uuid))).toHaveLength(1);
  });
});

describe('auto-links and duplicates', () => {
  // The nearest memories are read before the duplicates are known, one more than a store links to
  // (functions/memories/store/plan.ts): what lww supersedes is never a link target, and does not take the
  // place of one.
  const text = 'The customer prefers invoices by email every Monday.';
  const nearThree = async (t: Tenant) => {
    const ids: string[] = [];
    for (const word of ['Really', 'Truly', 'Indeed']) ids.push((await store(t, { observation: `${text} ${word}`, auto_link: false })).body.id);
    return ids.sort();
  };

  it('an lww store links to the three memories nearest to it, not to the duplicate it supersedes', async () => {
    const t = await engine.newTenant('pro');
    const near = await nearThree(t);
    const original = await store(t, { observation: text, auto_link: false });
    const again = await store(t, { observation: text });
    expect(again.status).toBe(201);
    expect(again.body.superseded).toEqual([original.body.id]);
    expect([...again.body.auto_links].sort()).toEqual(near);
  });

  it('the same with two current duplicates (one kept by on_conflict manual): the store asks for its neighbours again', async () => {
    const t = await engine.newTenant('pro');
    const near = await nearThree(t);
    const a = await store(t, { observation: text, auto_link: false });
    const b = await store(t, { observation: text, on_conflict: 'manual', auto_link: false });
    expect(b.body).toMatchObject({ conflict_detected: true, superseded: [] });
    const again = await store(t, { observation: text });
    expect(again.status).toBe(201);
    expect([...again.body.superseded].sort()).toEqual([a.body.id, b.body.id].sort());
    expect([...again.body.auto_links].sort()).toEqual(near);
  });
});

describe('auto-link races', () => {
  it('a link target deleted while the store decides: the store runs again and answers 201, not 500', async () => {
    const t = await engine.newTenant('pro');
    const first = await store(t, { observation: 'The customer prefers invoices by email every Monday.' });
    expect(first.status).toBe(201);
    // A DELETE of the neighbour committing after the store read it.
    const race = await withMemoryDeletedOnFirstInsert(engine, t, { table: 'memory_edges', column: 'target_id' }, () =>
      store(t, { observation: 'The customer prefers invoices by email every Monday. Really', auto_link: true }),
    );
    expect(race.result.status, race.result.text).toBe(201);
    expect(race.result.body.auto_links).toHaveLength(1);
    expect(race.inserts).toBeGreaterThan(1);
  });
});

describe('list, get, patch, delete', () => {
  it('lists newest first with paging, totals and filters; another tenant’s memory is 404', async () => {
    const a = await engine.newTenant();
    const b = await engine.newTenant();
    for (let i = 0; i < 5; i++) {
      await store(a, { observation: `note ${i}`, tags: i % 2 ? ['odd'] : ['even'], agent_id: i < 2 ? 'agent-1' : 'agent-2' });
      engine.clock.advance(10);
    }
    const page = await engine.request('GET', '/v1/memories?limit=2&offset=1', { key: a.key });
    expect(page.body).toMatchObject({ total: 5, total_count: 5, has_more: true });
    expect(page.body.memories.map((m: { observation: string }) => m.observation)).toEqual(['note 3', 'note 2']);
    const last = await engine.request('GET', '/v1/memories?limit=2&offset=4', { key: a.key });
    expect(last.body.has_more).toBe(false);
    const odd = await engine.request('GET', '/v1/memories?tags=odd', { key: a.key });
    expect(odd.body.memories.map((m: { observation: string }) => m.observation)).toEqual(['note 3', 'note 1']);
    const agent = await engine.request('GET', '/v1/memories?agent_id=agent-1', { key: a.key });
    expect(agent.body.total).toBe(2);
    expect((await engine.request('GET', '/v1/memories', { key: b.key })).body.total).toBe(0);
    const foreign = await engine.request('GET', `/v1/memories/${page.body.memories[0].uuid}`, { key: b.key });
    expect(foreign.status).toBe(404);
    for (const q of ['limit=0', 'limit=101', 'offset=-1', 'limit=abc']) {
      const res = await engine.request('GET', `/v1/memories?${q}`, { key: a.key });
      expect(res.status, q).toBe(400);
    }
    expect((await engine.request('GET', '/v1/memories/not-a-uuid', { key: a.key })).status).toBe(404);
  });

  it('patch changes fields, records before/after, re-embeds; foreign is 404; bad input 400', async () => {
    const t = await engine.newTenant();
    const other = await engine.newTenant();
    const m = await store(t, { observation: 'Office is in Berlin.', tags: ['office'] });
    const res = await engine.request('PATCH', `/v1/memories/${m.body.id}`, {
      key: t.key,
      body: { observation: 'Office moved to Hamburg.', importance: 8, tags: ['office', 'moved'] },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ uuid: m.body.id, observation: 'Office moved to Hamburg.' });
    expect(res.body.memory).toMatchObject({ importance: 8, tags: ['office', 'moved'] });
    expect(res.body.memory.hash).not.toBe(m.body.hash);
    const events = await eventsOf(t.tenantId);
    const update = events.find((e) => e.kind === 'update')!;
    expect(update.before.observation).toBe('Office is in Berlin.');
    expect(update.after.observation).toBe('Office moved to Hamburg.');
    expect(update.has_embedding).toBe(true);
    const found = await engine.request('GET', '/v1/memories/search?q=hamburg%20office&mode=keyword', { key: t.key });
    expect(found.body.memories[0]?.uuid).toBe(m.body.id);

    expect((await engine.request('PATCH', `/v1/memories/${m.body.id}`, { key: other.key, body: { importance: 1 } })).status).toBe(404);
    expect((await engine.request('PATCH', `/v1/memories/${m.body.id}`, { key: t.key, body: {} })).status).toBe(400);
    expect((await engine.request('PATCH', `/v1/memories/${m.body.id}`, { key: t.key, body: { importance: 0 } })).status).toBe(400);
    const self = await engine.request('PATCH', `/v1/memories/${m.body.id}`, { key: t.key, body: { superseded_by: m.body.id } });
    expect(self.status).toBe(400);
    expect(errorOf(self).details?.[0].path).toBe('superseded_by');
  });

  it('concurrent patches: one wins, the other is 409, nothing lost', async () => {
    const t = await engine.newTenant();
    const m = await store(t, { observation: 'Counter starts here.' });
    const [a, b] = await Promise.all([
      engine.request('PATCH', `/v1/memories/${m.body.id}`, { key: t.key, body: { observation: 'Version A' } }),
      engine.request('PATCH', `/v1/memories/${m.body.id}`, { key: t.key, body: { observation: 'Version B' } }),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    const winner = a.status === 200 ? 'Version A' : 'Version B';
    expect((await engine.request('GET', `/v1/memories/${m.body.id}`, { key: t.key })).body.observation).toBe(winner);
    const loser = a.status === 409 ? a : b;
    expect(errorOf(loser).code).toBe('CONFLICT');
  });

  it('delete is permanent, removes links, writes the event and audit entry', async () => {
    const t = await engine.newTenant();
    const a = await store(t, { observation: 'The staging database runs Postgres 15 with pgvector.' });
    const b = await store(t, { observation: 'The staging database runs Postgres 15 with pgvector enabled.' });
    expect(b.body.auto_links).toEqual([a.body.id]);
    const del = await engine.request('DELETE', `/v1/memories/${a.body.id}`, { key: t.key });
    expect(del.body).toEqual({ deleted: true, memory_id: a.body.id });
    expect((await engine.request('GET', `/v1/memories/${a.body.id}`, { key: t.key })).status).toBe(404);
    expect((await engine.request('DELETE', `/v1/memories/${a.body.id}`, { key: t.key })).status).toBe(404);
    const edges = await engine.sql<{ n: number }>(sql`SELECT count(*)::int AS n FROM memory_edges WHERE tenant_id = ${t.tenantId}`);
    expect(edges[0].n).toBe(0);
    const events = await eventsOf(t.tenantId);
    const deleted = events.find((e) => e.kind === 'delete')!;
    expect(deleted.before.observation).toMatch(/staging/);
    expect(await auditOps(t.tenantId)).toContain('memory.delete');
    expect((await engine.request('GET', '/v1/dashboard', { key: t.key })).body.memory_count).toBe(1);
  });
});

describe('TTL', () => {
  it('an expired memory disappears from every read at once and maintenance purges it', async () => {
    const t = await engine.newTenant();
    const m = await store(t, { observation: 'Temporary door code 4711.', ttl_seconds: 60 });
    expect(Date.parse(m.body.expires_at ?? '') - Date.parse(m.body.created_at)).toBe(60_000);
    engine.clock.advance(61_000);
    try {
      expect((await engine.request('GET', `/v1/memories/${m.body.id}`, { key: t.key })).status).toBe(404);
      expect((await engine.request('GET', '/v1/memories', { key: t.key })).body.total).toBe(0);
      expect((await engine.request('GET', '/v1/memories/search?q=door%20code', { key: t.key })).body.total_results).toBe(0);
      await engine.node.runner.maintain();
      const left = await engine.sql<{ n: number }>(sql`SELECT count(*)::int AS n FROM memories WHERE tenant_id = ${t.tenantId}`);
      expect(left[0].n).toBe(0);
      expect((await eventsOf(t.tenantId)).map((e) => e.kind)).toContain('expire');
      expect(await auditOps(t.tenantId)).toContain('memory.expire');
    } finally {
      engine.clock.advance(-61_000);
    }
  });
});

describe('quota', () => {
  it('storing past the monthly memories limit is 429 with usage, and stores nothing', async () => {
    const t = await engine.newTenant();
    const period = engine.clock.now().toISOString().slice(0, 7);
    await engine.node.services.db.execute(sql`
      INSERT INTO usage_counters (tenant_id, metric, bucket, value) VALUES (${t.tenantId}, 'memories', ${period}, 5000)`);
    const res = await store(t, { observation: 'One too many.' });
    expect(res.status).toBe(429);
    expect(res.body).toMatchObject({ code: 'RATE_LIMITED', usage: { limit: 5000, plan: 'free' } });
    expect((await engine.request('GET', '/v1/memories', { key: t.key })).body.total).toBe(0);
  });
});

describe('context/now and export', () => {
  it('context/now reports time, recent memories and the last activity', async () => {
    const t = await engine.newTenant();
    const empty = await engine.request('GET', '/v1/context/now', { key: t.key });
    expect(empty.body).toMatchObject({ recent_memories: [], recent_count: 0, last_session_at: null, seconds_since_last_session: null });
    await store(t, { observation: 'first' });
    engine.clock.advance(5_000);
    try {
      const res = await engine.request('GET', '/v1/context/now', { key: t.key });
      expect(res.body.recent_count).toBe(1);
      expect(res.body.recent_memories[0].observation).toBe('first');
      expect(res.body.seconds_since_last_session).toBeGreaterThanOrEqual(5);
      expect(Date.parse(res.body.server_time_utc)).not.toBeNaN();
    } finally {
      engine.clock.advance(-5_000);
    }
  });

  it('exports md, json and csv with the right content types and escaping, own memories only', async () => {
    const t = await engine.newTenant();
    const other = await engine.newTenant();
    await store(other, { observation: 'not mine' });
    await store(t, { observation: 'Plain one', tags: ['a'] });
    await store(t, { observation: 'Has "quotes", commas\nand a newline', tags: ['b'], agent_id: 'x' });
    const md = await engine.request('GET', '/v1/memories/export', { key: t.key });
    expect(md.status).toBe(200);
    expect(md.headers.get('content-type')).toMatch(/^text\/markdown/);
    expect(md.headers.get('content-disposition')).toMatch(/attachment; filename="memories-.*\.md"/);
    expect(md.text).toContain('Plain one');
    expect(md.text).not.toContain('not mine');
    const json = await engine.request('GET', '/v1/memories/export?format=json', { key: t.key });
    expect(json.headers.get('content-type')).toMatch(/^application\/json/);
    expect(json.body.map((m: { observation: string }) => m.observation).sort()).toEqual(['Has "quotes", commas\nand a newline', 'Plain one']);
    const csv = await engine.request('GET', '/v1/memories/export?format=csv&tags=b', { key: t.key });
    expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(csv.text.split('\r\n')[0]).toBe('uuid,observation,tags,importance,confidence,recall_count,agent_id,space_id,context,hash,created_at,updated_at');
    expect(csv.text).toContain('"Has ""quotes"", commas\nand a newline"');
    expect(csv.text).not.toContain('Plain one');
    expect((await engine.request('GET', '/v1/memories/export?format=xml', { key: t.key })).status).toBe(400);
  });

  it('csv export defuses spreadsheet formulas (CSV injection) and leaves numbers alone', async () => {
    const t = await engine.newTenant();
    await store(t, { observation: '=HYPERLINK("http://evil.example","click")', tags: ['f', '+tag'], agent_id: '@agent' });
    await store(t, { observation: '-1 is not a formula here either', tags: ['f'] });
    const csv = await engine.request('GET', '/v1/memories/export?format=csv&tags=f', { key: t.key });
    const body = csv.text.split('\r\n').slice(1).join('\n');
    expect(body).toContain(`"'=HYPERLINK(""http://evil.example"",""click"")"`);
    expect(body).toContain("'-1 is not a formula here either");
    expect(body).toContain('f;+tag');
    expect(body).toContain(",'@agent,");
    expect(body).not.toMatch(/(^|,)[=+\-@]/m);
  });

  it('csv guard also catches a leading line feed, spaces before =, and full-width ＝＋－＠', async () => {
    const t = await engine.newTenant();
    const sneaky = ['\n=1+1', ' =1+1', '  \t@SUM(A1)', '＝1+1', '＋1', '－1', '＠x', '\u00a0=1'];
    for (const [i, context] of sneaky.entries()) await store(t, { observation: `sneaky ${i}`, tags: ['g'], context, agent_id: context.trim() || 'x' });
    await store(t, { observation: 'harmless', tags: ['g'], context: 'a = b', agent_id: 'x=1' });
    const csv = await engine.request('GET', '/v1/memories/export?format=csv&tags=g', { key: t.key });
    const cells = parseCsv(csv.text)
      .slice(1)
      .flatMap((row) => [row[6], row[8]]);
    for (const value of sneaky) {
      expect(cells, JSON.stringify(value)).toContain(`'${value}`);
      expect(cells, JSON.stringify(value)).not.toContain(value);
    }
    expect(cells).toContain('a = b');
    expect(cells).toContain('x=1');
  });

  it('exports more than one page in order', async () => {
    const t = await engine.newTenant('pro');
    const values = Array.from(
      { length: 520 },
      (_, i) =>
        `('${crypto.randomUUID()}', '${t.tenantId}', 'bulk ${i}', '{}', 5, 1, 0, 'h${i}', (SELECT embedding FROM memories LIMIT 1), now() - interval '${i} seconds', now())`,
    );
    await store(t, { observation: 'seed' });
    await engine.node.services.db.execute(
      sql.raw(
        `INSERT INTO memories (id, tenant_id, observation, tags, importance, confidence, recall_count, content_hash, embedding, created_at, updated_at) VALUES ${values.join(',')}`,
      ),
    );
    const json = await engine.request('GET', '/v1/memories/export?format=json', { key: t.key });
    expect(json.body).toHaveLength(521);
    const times = json.body.map((m: { created_at: string }) => Date.parse(m.created_at));
    expect([...times].sort((x, y) => y - x)).toEqual(times);
  });
});

/** RFC 4180 rows (quoted fields may hold commas, quotes and line breaks). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') (field += '"'), i++;
      else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') row.push(field), (field = '');
    else if (ch === '\r' && text[i + 1] === '\n') rows.push([...row, field]), (row = []), (field = ''), i++;
    else field += ch;
  }
  if (field || row.length) rows.push([...row, field]);
  return rows;
}
