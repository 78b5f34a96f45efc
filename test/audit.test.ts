import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { type SQL, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendAudit } from '../shared/platform/data/audit';
import { createEngine, errorOf, type Tenant, type TestEngine } from './harness';

let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const DAY = 86_400_000;
const HOUR = 3_600_000;
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const get = <T = never, P extends string = string>(t: Tenant, path: P) => engine.request<T, 'GET', P>('GET', path, { key: t.key });
const store = (t: Tenant, body: Record<string, unknown>) => engine.request('POST', '/v1/memories', { key: t.key, body });

async function query<T = any>(q: SQL): Promise<T[]> {
  return await engine.sql<T>(q);
}

/** Runs `fn` with the clock moved by `ms`, then moves it back (the engine is shared by the file). */
async function at<T>(ms: number, fn: () => Promise<T>): Promise<T> {
  engine.clock.advance(ms);
  try {
    return await fn();
  } finally {
    engine.clock.advance(-ms);
  }
}

/** Tampering as the database owner: the append-only trigger is off only inside this transaction. */
async function tamperAudit(q: SQL) {
  await engine.node.services.db.transaction(async (tx) => {
    await tx.execute(sql`ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only`);
    await tx.execute(q);
    await tx.execute(sql`ALTER TABLE audit_log ENABLE TRIGGER audit_log_append_only`);
  });
}

/** Deletes the way only a prune may (the trigger lets it through), without moving the chain start. */
async function deleteAudit(tenantId: string, seq: number) {
  await engine.node.services.db.transaction(async (tx) => {
    await tx.execute(sql`SET LOCAL engram.audit_prune = 'on'`);
    await tx.execute(sql`DELETE FROM audit_log WHERE tenant_id = ${tenantId} AND seq = ${seq}`);
  });
}

const entryAt = async (tenantId: string, seq: number) =>
  (
    await query<{ id: string; prev_hash: string; entry_hash: string }>(
      sql`SELECT id, prev_hash, entry_hash FROM audit_log WHERE tenant_id = ${tenantId} AND seq = ${seq}`,
    )
  )[0];

async function headOf(tenantId: string) {
  const [h] = await query<{ seq: unknown; hash: string; first_seq: unknown; first_prev_hash: string }>(
    sql`SELECT seq, hash, first_seq, first_prev_hash FROM audit_heads WHERE tenant_id = ${tenantId}`,
  );
  return { seq: Number(h.seq), hash: h.hash, first_seq: Number(h.first_seq), first_prev_hash: h.first_prev_hash };
}

describe('GET /v1/audit', () => {
  it('lists memory operations as create, update and delete with hash, agent and chain fields, newest first', async () => {
    const t = await engine.newTenant();
    const created = await store(t, { observation: 'The user prefers invoices in EUR.', agent_id: 'billing-agent' });
    const id = created.body.id;
    const patched = await engine.request('PATCH', `/v1/memories/${id}`, {
      key: t.key,
      body: { observation: 'The user prefers invoices in USD.', importance: 7 },
    });
    expect(patched.status).toBe(200);
    expect((await engine.request('DELETE', `/v1/memories/${id}`, { key: t.key })).status).toBe(200);

    const res = await get(t, '/v1/audit');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ total: 5, has_more: false, limit: 50, offset: 0 });
    const entries = res.body.entries;
    expect(entries.map((e: any) => e.operation)).toEqual(['delete', 'update', 'create', 'key.created', 'tenant.created']);
    expect(entries.map((e: any) => e.seq)).toEqual([5, 4, 3, 2, 1]);
    const [del, upd, cre, key, tenant] = entries;
    expect(cre).toMatchObject({
      operation: 'create',
      memory_id: id,
      content_hash: sha256('The user prefers invoices in EUR.'),
      agent_id: 'billing-agent',
      source_operation: 'memory.create',
      resource_type: 'memory',
      resource_id: id,
      actor: t.keyId,
      request_id: created.headers.get('x-request-id'),
      metadata: { hash: sha256('The user prefers invoices in EUR.'), agent_id: 'billing-agent', conflict: false },
    });
    expect(cre.entry_id).toMatch(/^aud_/);
    expect(Date.parse(cre.timestamp)).not.toBeNaN();
    expect(upd).toMatchObject({ operation: 'update', memory_id: id, content_hash: sha256('The user prefers invoices in USD.'), agent_id: 'billing-agent' });
    expect((upd.metadata.changed as string[]).sort()).toEqual(['importance', 'observation']);
    expect(del).toMatchObject({
      operation: 'delete',
      memory_id: id,
      content_hash: sha256('The user prefers invoices in USD.'),
      agent_id: 'billing-agent',
      source_operation: 'memory.delete',
    });
    // Other audited events keep their own name and carry no memory fields.
    expect(key).toMatchObject({
      operation: 'key.created',
      memory_id: null,
      content_hash: null,
      agent_id: null,
      resource_type: 'api_key',
      resource_id: t.keyId,
    });
    expect(tenant).toMatchObject({ operation: 'tenant.created', memory_id: null, resource_id: t.tenantId, actor: 'admin' });
    // The chain: each entry points at the one before it.
    expect(tenant.prev_hash).toBe('');
    for (let i = 0; i < entries.length - 1; i++) expect(entries[i].prev_hash).toBe(entries[i + 1].entry_hash);
  });

  it('pages with limit and offset, and reports total and has_more', async () => {
    const t = await engine.newTenant();
    for (const o of ['one', 'two', 'three']) await store(t, { observation: o });
    const first = await get(t, '/v1/audit?limit=2');
    expect(first.body).toMatchObject({ total: 5, has_more: true, limit: 2, offset: 0 });
    expect(first.body.entries.map((e: any) => e.seq)).toEqual([5, 4]);
    const last = await get(t, '/v1/audit?limit=2&offset=4');
    expect(last.body).toMatchObject({ total: 5, has_more: false, limit: 2, offset: 4 });
    expect(last.body.entries.map((e: any) => e.seq)).toEqual([1]);
    expect((await get(t, '/v1/audit?limit=1000')).body.entries).toHaveLength(5);
  });

  it('event_type keeps only those memory operations (other events are left out)', async () => {
    const t = await engine.newTenant();
    const a = await store(t, { observation: 'alpha' });
    await store(t, { observation: 'beta' });
    await engine.request('PATCH', `/v1/memories/${a.body.id}`, { key: t.key, body: { tags: ['x'] } });
    await engine.request('DELETE', `/v1/memories/${a.body.id}`, { key: t.key });
    await engine.request('POST', '/v1/keys/rotate', { key: t.key });

    const creates = await get(t, '/v1/audit?event_type=create');
    expect(creates.body.total).toBe(2);
    expect(creates.body.entries.map((e: any) => e.operation)).toEqual(['create', 'create']);
    const changes = await get(t, '/v1/audit?event_type=update,delete');
    expect(changes.body.entries.map((e: any) => e.operation)).toEqual(['delete', 'update']);
    const spaced = await get(t, `/v1/audit?event_type=${encodeURIComponent(' Create , DELETE ')}`);
    expect(spaced.body.entries.map((e: any) => e.operation)).toEqual(['delete', 'create', 'create']);
    expect((await get(t, '/v1/audit?event_type=rollback')).body).toMatchObject({ total: 0, entries: [] });
    // Without the filter the key events are listed too.
    const all = await get(t, '/v1/audit');
    expect(all.body.entries.map((e: any) => e.operation)).toEqual(
      expect.arrayContaining(['key.rotated', 'key.created', 'tenant.created', 'create', 'update', 'delete']),
    );
  });

  it('rejects bad input: 400 naming the field, 422 INVALID_RANGE for since after until', async () => {
    const t = await engine.newTenant();
    const cases: [string, string][] = [
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['limit=ten', 'limit'],
      ['limit=1.5', 'limit'],
      ['offset=-1', 'offset'],
      ['since=yesterday', 'since'],
      ['since=2026-02-30', 'since'],
      ['until=not-a-date', 'until'],
      ['event_type=bogus', 'event_type'],
      ['event_type=create,bogus', 'event_type'],
      ['event_type=', 'event_type'],
    ];
    for (const [qs, field] of cases) {
      const res = await get(t, `/v1/audit?${qs}`);
      expect(res.status, qs).toBe(400);
      expect(errorOf(res).code, qs).toBe('VALIDATION_ERROR');
      expect(
        errorOf(res).details?.map((d: { path: string }) => d.path),
        qs,
      ).toContain(field);
    }
    const range = await get(t, '/v1/audit?since=2026-06-02T00:00:00Z&until=2026-06-01T00:00:00Z');
    expect(range.status).toBe(422);
    expect(errorOf(range).code).toBe('INVALID_RANGE');
  });

  it('since and until bound the period (inclusive)', async () => {
    const t = await at(-3 * HOUR, () => engine.newTenant());
    const t0 = engine.clock.now().getTime();
    await at(-3 * HOUR, () => store(t, { observation: 'three hours ago' }));
    await at(-2 * HOUR, () => store(t, { observation: 'two hours ago' }));
    await at(-1 * HOUR, () => store(t, { observation: 'one hour ago' }));
    const iso = (offset: number) => new Date(t0 + offset).toISOString();
    const hashes = async (qs: string) => (await get(t, `/v1/audit?event_type=create&${qs}`)).body.entries.map((e: any) => e.content_hash);
    expect(await hashes(`since=${iso(-2.5 * HOUR)}`)).toEqual([sha256('one hour ago'), sha256('two hours ago')]);
    expect(await hashes(`until=${iso(-1.5 * HOUR)}`)).toEqual([sha256('two hours ago'), sha256('three hours ago')]);
    expect(await hashes(`since=${iso(-2.5 * HOUR)}&until=${iso(-1.5 * HOUR)}`)).toEqual([sha256('two hours ago')]);
    // A time without an offset is UTC; a bare date is midnight UTC.
    const noZone = iso(-2.5 * HOUR).replace('Z', '');
    expect(await hashes(`since=${noZone}`)).toHaveLength(2);
    expect(await hashes('until=2000-01-01')).toEqual([]);
  });

  it('a TTL purge is listed as a delete with metadata.reason "expired"', async () => {
    const t = await engine.newTenant();
    const m = await store(t, { observation: 'Temporary door code 4711.', ttl_seconds: 60, agent_id: 'door-agent' });
    await at(61_000, () => engine.node.runner.maintain());
    const res = await get(t, '/v1/audit?event_type=delete');
    expect(res.body.total).toBe(1);
    expect(res.body.entries[0]).toMatchObject({
      operation: 'delete',
      memory_id: m.body.id,
      content_hash: null,
      source_operation: 'memory.expire',
      actor: 'system',
      metadata: { reason: 'expired', count: 1, memory_ids: [m.body.id] },
    });
  });

  it('returns only entries inside the tier retention window, even before they are pruned', async () => {
    const free = await at(-8 * DAY, () => engine.newTenant('free'));
    const pro = await at(-8 * DAY, () => engine.newTenant('pro'));
    for (const t of [free, pro]) {
      await at(-8 * DAY, () => store(t, { observation: 'eight days ago' }));
      await store(t, { observation: 'today' });
    }
    const freeList = await get(free, '/v1/audit');
    expect(freeList.body.total).toBe(1);
    expect(freeList.body.entries[0].content_hash).toBe(sha256('today'));
    // An explicit since before the window does not widen it.
    expect((await get(free, `/v1/audit?since=${new Date(engine.clock.now().getTime() - 30 * DAY).toISOString()}`)).body.total).toBe(1);
    const proList = await get(pro, '/v1/audit');
    expect(proList.body.total).toBe(4);
    expect(proList.body.entries.map((e: any) => e.operation)).toEqual(['create', 'create', 'key.created', 'tenant.created']);
  });

  it("never shows another tenant's entries", async () => {
    const a = await engine.newTenant('pro');
    const b = await engine.newTenant('pro');
    const mine = await store(a, { observation: 'mine' });
    const theirs = await store(b, { observation: 'theirs' });
    const list = await get(a, '/v1/audit?limit=1000');
    const text = JSON.stringify(list.body);
    expect(text).toContain(mine.body.id);
    expect(text).not.toContain(theirs.body.id);
    expect(text).not.toContain(b.tenantId);
    expect(text).not.toContain(b.keyId);
    expect(list.body.total).toBe(3);
    const exported = await get(a, '/v1/audit/export?format=jsonl');
    expect(exported.text).toContain(mine.body.id);
    expect(exported.text).not.toContain(theirs.body.id);
    expect(exported.text).not.toContain(b.tenantId);
    expect((await get(a, '/v1/audit/summary')).body.total_operations).toBe(3);
    expect((await get(a, '/v1/audit/verify')).body.checked).toEqual({ memories: 1, audit_entries: 3 });
  });
});

describe('GET /v1/audit/export', () => {
  it('is Starter+: free is 403 TIER_REQUIRED with the required tier', async () => {
    const t = await engine.newTenant('free');
    const res = await get(t, '/v1/audit/export');
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ code: 'TIER_REQUIRED', required_tier: 'starter', current_tier: 'free' });
  });

  it('csv by default: the documented columns, chain order, RFC 4180 quoting, an attachment', async () => {
    const t = await engine.newTenant('starter');
    const m = await store(t, { observation: 'Ships on Fridays.', agent_id: 'ops "night", shift' });
    const res = await get(t, '/v1/audit/export');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="audit-\d{4}-\d{2}-\d{2}\.csv"$/);
    const lines = res.text.trimEnd().split('\r\n');
    expect(lines[0]).toBe('timestamp,operation,agent_id,artifact_id,content_hash');
    expect(lines).toHaveLength(4);
    expect(lines[1]).toMatch(new RegExp(`^[^,]+Z,tenant\\.created,,${t.tenantId},$`));
    expect(lines[2]).toMatch(new RegExp(`^[^,]+Z,key\\.created,,${t.keyId},$`));
    expect(lines[3]).toMatch(/Z,create,/);
    expect(lines[3].endsWith(`,"ops ""night"", shift",${m.body.id},${sha256('Ships on Fridays.')}`)).toBe(true);
  });

  it('json is an array and jsonl one entry per line, both the list entries in chain order', async () => {
    const t = await engine.newTenant('starter');
    await store(t, { observation: 'first', agent_id: 'a1' });
    await store(t, { observation: 'second' });
    const listed = (await get(t, '/v1/audit')).body.entries.reverse();

    const json = await get(t, '/v1/audit/export?format=json');
    expect(json.status).toBe(200);
    expect(json.headers.get('content-type')).toMatch(/^application\/json/);
    expect(json.headers.get('content-disposition')).toMatch(/^attachment; filename="audit-.*\.json"$/);
    expect(json.body).toEqual(listed);

    const jsonl = await get(t, '/v1/audit/export?format=jsonl');
    expect(jsonl.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    expect(jsonl.headers.get('content-disposition')).toMatch(/\.jsonl"$/);
    expect(jsonl.text.endsWith('\n')).toBe(true);
    expect(
      jsonl.text
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toEqual(listed);
  });

  it('since/until filter it; since after until is 422 INVALID_RANGE; bad input is 400', async () => {
    const t = await at(-2 * HOUR, () => engine.newTenant('starter'));
    await store(t, { observation: 'recent' });
    const since = new Date(engine.clock.now().getTime() - HOUR).toISOString();
    const recent = await get(t, `/v1/audit/export?format=jsonl&since=${since}`);
    expect(
      recent.text
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l).operation),
    ).toEqual(['create']);
    const old = await get(t, `/v1/audit/export?format=json&until=${since}`);
    expect(old.body.map((e: any) => e.operation)).toEqual(['tenant.created', 'key.created']);

    const range = await get(t, '/v1/audit/export?since=2026-06-02T00:00:00Z&until=2026-06-01T00:00:00Z');
    expect(range.status).toBe(422);
    expect(range.body).toMatchObject({ code: 'INVALID_RANGE', status: 422 });
    for (const [qs, field] of [
      ['format=xml', 'format'],
      ['since=soon', 'since'],
      ['until=2026-13-01', 'until'],
    ]) {
      const res = await get(t, `/v1/audit/export?${qs}`);
      expect(res.status, qs).toBe(400);
      expect(errorOf(res).details?.[0].path).toBe(field);
    }
  });

  it('streams more than one page, and the file alone recomputes the hash chain', async () => {
    const t = await engine.newTenant('pro');
    await engine.node.services.db.transaction(async (tx) => {
      const now = engine.clock.now();
      for (let i = 0; i < 1_100; i++) {
        await appendAudit(tx, {
          tenantId: t.tenantId,
          operation: 'test.bulk',
          resourceType: 'test',
          resourceId: `r${i}`,
          actor: 'system',
          metadata: { i, note: 'ü "quoted" \u2028' },
          at: now,
        });
      }
    });
    const res = await get(t, '/v1/audit/export?format=jsonl');
    const entries = res.text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(entries).toHaveLength(1_102);
    let prev = '';
    entries.forEach((e, i) => {
      expect(e.seq).toBe(i + 1);
      expect(e.prev_hash).toBe(prev);
      const canonical = canonicalize({
        id: e.entry_id,
        tenant_id: t.tenantId,
        seq: e.seq,
        created_at: e.timestamp,
        operation: e.source_operation,
        resource_type: e.resource_type,
        resource_id: e.resource_id,
        actor: e.actor,
        metadata: e.metadata,
      });
      expect(e.entry_hash).toBe(sha256(prev + canonical));
      prev = e.entry_hash;
    });
    const json = await get(t, '/v1/audit/export?format=json');
    expect(json.body).toHaveLength(1_102);
    const csv = await get(t, '/v1/audit/export');
    expect(csv.text.trimEnd().split('\r\n')).toHaveLength(1_103);
    const verified = await get(t, '/v1/audit/verify');
    expect(verified.body).toMatchObject({ valid: true, checked: { memories: 0, audit_entries: 1_102 } });
  });
});

describe('GET /v1/audit/summary', () => {
  it('counts operations by kind over the retention window', async () => {
    const t = await engine.newTenant();
    const a = await store(t, { observation: 'one' });
    await store(t, { observation: 'two' });
    await engine.request('PATCH', `/v1/memories/${a.body.id}`, { key: t.key, body: { importance: 9 } });
    const before = engine.clock.now().getTime();
    const res = await get(t, '/v1/audit/summary');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      total_operations: 5,
      error_count: 0,
      anomaly_count: 0,
      by_operation: { create: 2, update: 1, 'key.created': 1, 'tenant.created': 1 },
      retention_days: 7,
    });
    expect(Date.parse(res.body.period_start)).toBe(before - 7 * DAY);
    expect(Date.parse(res.body.period_end)).toBe(before);
    // since narrows the period; a since before the window is clamped to it.
    const since = new Date(before + 1_000).toISOString();
    await at(2_000, async () => {
      const later = await get(t, `/v1/audit/summary?since=${since}`);
      expect(later.body).toMatchObject({ total_operations: 0, by_operation: {}, period_start: since });
    });
    const clamped = await get(t, `/v1/audit/summary?since=${new Date(before - 60 * DAY).toISOString()}`);
    expect(clamped.body.total_operations).toBe(5);
    expect(Date.parse(clamped.body.period_start)).toBe(before - 7 * DAY);
  });

  it('counts 4xx responses as errors and 5xx as anomalies, per tenant (the 500 forced through a failing query)', async () => {
    const t = await engine.newTenant();
    const other = await engine.newTenant();
    const unknown = 'urn:uuid:01935f6e-8a2b-7c3d-9e4f-5a6b7c8d9e0f';
    expect((await get(t, `/v1/memories/${unknown}`)).status).toBe(404);
    expect((await store(t, { observation: '' })).status).toBe(400);
    let summary = await get(t, '/v1/audit/summary');
    expect(summary.body).toMatchObject({ error_count: 2, anomaly_count: 0 });

    // Make the memory lookup fail as a broken database would; counting uses its own connection path.
    // Queries reach the driver through the session's prepareQuery (shared/platform/data/db.ts rows()).
    const services = engine.node.services;
    const realDb = services.db;
    type Session = { prepareQuery(q: { sql: string }, ...rest: unknown[]): { execute(): Promise<unknown> } };
    const failing = (session: Session) =>
      new Proxy(session, {
        get: (s, p) =>
          p === 'prepareQuery'
            ? (q: { sql: string }, ...rest: unknown[]) =>
                q.sql.includes('FROM memories m WHERE m.id =')
                  ? { execute: () => Promise.reject(new Error('could not read block 42')) }
                  : s.prepareQuery(q, ...rest)
            : Reflect.get(s, p),
      });
    services.db = new Proxy(realDb, {
      get: (target, prop) => (prop === 'session' ? failing(Reflect.get(target, prop) as Session) : Reflect.get(target, prop)),
    });
    try {
      const broken = await get(t, `/v1/memories/${unknown}`);
      expect(broken.status).toBe(500);
      expect(broken.body).toMatchObject({ code: 'INTERNAL_ERROR' });
      expect(broken.text).not.toContain('block 42');
    } finally {
      services.db = realDb;
    }
    summary = await get(t, '/v1/audit/summary');
    expect(summary.body).toMatchObject({ error_count: 3, anomaly_count: 1 });
    // Requests without a valid key belong to no tenant and are not counted.
    await engine.request('GET', '/v1/audit/summary', { key: `sk_${'B'.repeat(43)}` });
    expect((await get(other, '/v1/audit/summary')).body).toMatchObject({ error_count: 0, anomaly_count: 0 });
    // Error counts are per UTC day, from the day of period_start.
    const tomorrow = new Date(engine.clock.now().getTime() + DAY).toISOString().slice(0, 10);
    await at(DAY, async () => {
      const next = await get(t, `/v1/audit/summary?since=${tomorrow}T00:00:00Z`);
      expect(next.body).toMatchObject({ error_count: 0, anomaly_count: 0 });
      expect((await get(t, '/v1/audit/summary')).body).toMatchObject({ error_count: 3, anomaly_count: 1 });
    });
  });

  it('since in the future is 422 INVALID_RANGE; a bad since is 400', async () => {
    const t = await engine.newTenant();
    const future = await get(t, `/v1/audit/summary?since=${new Date(engine.clock.now().getTime() + HOUR).toISOString()}`);
    expect(future.status).toBe(422);
    expect(errorOf(future).code).toBe('INVALID_RANGE');
    const bad = await get(t, '/v1/audit/summary?since=last-week');
    expect(bad.status).toBe(400);
    expect(errorOf(bad).details?.[0].path).toBe('since');
  });
});

describe('GET /v1/audit/verify', () => {
  it('is Pro+: free and starter are 403 FEATURE_NOT_AVAILABLE (TIER_REQUIRED is only for the export)', async () => {
    for (const tier of ['free', 'starter'] as const) {
      const t = await engine.newTenant(tier);
      const res = await get(t, '/v1/audit/verify');
      expect(res.status, tier).toBe(403);
      expect(res.body).toMatchObject({ code: 'FEATURE_NOT_AVAILABLE', required_tier: 'pro', current_tier: tier });
    }
  });

  it('a fresh tenant verifies valid', async () => {
    const t = await engine.newTenant('pro');
    const res = await get(t, '/v1/audit/verify');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ valid: true, integrity_failures: [], failure_count: 0, checked: { memories: 0, audit_entries: 2 } });
    expect(Date.parse(res.body.timestamp)).not.toBeNaN();
  });

  it('stays valid after every step of a random sequence of creates, updates and deletes', async () => {
    const t = await engine.newTenant('pro');
    let seed = 7;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const live: string[] = [];
    for (let step = 0; step < 15; step++) {
      const op = live.length === 0 ? 0 : rand(3);
      if (op === 0) live.push((await store(t, { observation: `memory ${step} ${rand(1000)}`, tags: [`t${rand(3)}`] })).body.id);
      else if (op === 1) {
        const id = live[rand(live.length)];
        expect((await engine.request('PATCH', `/v1/memories/${id}`, { key: t.key, body: { observation: `changed ${step}` } })).status).toBe(200);
      } else {
        const [id] = live.splice(rand(live.length), 1);
        expect((await engine.request('DELETE', `/v1/memories/${id}`, { key: t.key })).status).toBe(200);
      }
      const res = await get(t, '/v1/audit/verify');
      expect(res.body.valid, `step ${step}`).toBe(true);
      expect(res.body.checked).toEqual({ memories: live.length, audit_entries: step + 3 });
    }
  });

  it('names a memory whose content was changed in the database', async () => {
    const t = await engine.newTenant('pro');
    const other = await engine.newTenant('pro');
    const m = await store(t, { observation: 'Original content.' });
    await store(t, { observation: 'Untouched.' });
    await store(other, { observation: 'Original content.' });
    const bare = m.body.id.replace('urn:uuid:', '');
    await engine.node.services.db.execute(sql`UPDATE memories SET observation = 'Forged content.' WHERE id = ${bare}::uuid`);
    const res = await get(t, '/v1/audit/verify');
    expect(res.body.valid).toBe(false);
    expect(res.body.failure_count).toBe(1);
    expect(res.body.integrity_failures).toEqual([
      { kind: 'memory_hash', id: m.body.id, expected: sha256('Forged content.'), actual: sha256('Original content.') },
    ]);
    expect((await get(other, '/v1/audit/verify')).body.valid).toBe(true);
    await engine.node.services.db.execute(sql`UPDATE memories SET observation = 'Original content.' WHERE id = ${bare}::uuid`);
    expect((await get(t, '/v1/audit/verify')).body.valid).toBe(true);
  });

  it('names an audit row whose metadata was changed in the database', async () => {
    const t = await engine.newTenant('pro');
    await store(t, { observation: 'one' });
    await store(t, { observation: 'two' });
    const target = await entryAt(t.tenantId, 3);
    await tamperAudit(sql`UPDATE audit_log SET metadata = jsonb_set(metadata, '{hash}', '"0000"') WHERE tenant_id = ${t.tenantId} AND seq = 3`);
    const res = await get(t, '/v1/audit/verify');
    expect(res.body.valid).toBe(false);
    expect(res.body.integrity_failures).toHaveLength(1);
    expect(res.body.integrity_failures[0]).toMatchObject({ kind: 'audit_hash', id: target.id, seq: 3, actual: target.entry_hash });
    expect(res.body.integrity_failures[0].expected).not.toBe(target.entry_hash);
    // The trigger is back: nobody else can update.
    await expect(engine.node.services.db.execute(sql`UPDATE audit_log SET actor = 'x' WHERE tenant_id = ${t.tenantId}`)).rejects.toThrow();
  });

  it('a rewritten entry_hash fails that row and the link of the next one', async () => {
    const t = await engine.newTenant('pro');
    await store(t, { observation: 'one' });
    await store(t, { observation: 'two' });
    const [third, fourth] = [await entryAt(t.tenantId, 3), await entryAt(t.tenantId, 4)];
    await tamperAudit(sql`UPDATE audit_log SET entry_hash = ${'f'.repeat(64)} WHERE tenant_id = ${t.tenantId} AND seq = 3`);
    const res = await get(t, '/v1/audit/verify');
    expect(res.body.integrity_failures).toEqual([
      { kind: 'audit_hash', id: third.id, seq: 3, expected: third.entry_hash, actual: 'f'.repeat(64) },
      { kind: 'audit_link', id: fourth.id, seq: 4, expected: 'f'.repeat(64), actual: third.entry_hash },
    ]);
  });

  it('a removed entry is a gap; removed entries at the end disagree with the head', async () => {
    const t = await engine.newTenant('pro');
    for (const o of ['one', 'two', 'three']) await store(t, { observation: o });
    const fourth = await entryAt(t.tenantId, 4);
    await deleteAudit(t.tenantId, 3);
    let res = await get(t, '/v1/audit/verify');
    expect(res.body.integrity_failures).toEqual([{ kind: 'audit_gap', id: fourth.id, seq: 4, expected: '3', actual: '4' }]);
    await deleteAudit(t.tenantId, 5);
    res = await get(t, '/v1/audit/verify');
    expect(res.body.integrity_failures).toEqual([
      { kind: 'audit_gap', id: fourth.id, seq: 4, expected: '3', actual: '4' },
      { kind: 'audit_head', id: fourth.id, seq: 5, expected: '4', actual: '5' },
    ]);
  });
});

describe('retention pruning (scheduled maintenance)', () => {
  it("deletes entries older than each tenant's tier allows and keeps every retained chain verifiable", async () => {
    // free: 3 entries 10 days old, 1 today. pro: 3 entries 40 days old, 1 at 10 days, 1 today.
    // gone: free, every entry 10 days old.
    const free = await at(-10 * DAY, () => engine.newTenant('free'));
    await at(-10 * DAY, () => store(free, { observation: 'old' }));
    await store(free, { observation: 'new' });
    const pro = await at(-40 * DAY, () => engine.newTenant('pro'));
    await at(-40 * DAY, () => store(pro, { observation: 'very old' }));
    await at(-10 * DAY, () => store(pro, { observation: 'old' }));
    await store(pro, { observation: 'new' });
    const gone = await at(-10 * DAY, () => engine.newTenant('free'));
    await at(-10 * DAY, () => store(gone, { observation: 'old' }));
    const freeFourth = await entryAt(free.tenantId, 4);
    const proFourth = await entryAt(pro.tenantId, 4);
    const goneHead = await headOf(gone.tenantId);

    const done = await engine.node.runner.maintain();
    expect(done.audit_retention).toBeGreaterThanOrEqual(0);

    const seqs = async (tenantId: string) =>
      (await query<{ seq: string }>(sql`SELECT seq FROM audit_log WHERE tenant_id = ${tenantId} ORDER BY seq`)).map((r) => Number(r.seq));
    expect(await seqs(free.tenantId)).toEqual([4]);
    expect(await headOf(free.tenantId)).toMatchObject({ first_seq: 4, first_prev_hash: freeFourth.prev_hash, seq: 4 });
    expect(await seqs(pro.tenantId)).toEqual([4, 5]);
    expect(await headOf(pro.tenantId)).toMatchObject({ first_seq: 4, first_prev_hash: proFourth.prev_hash });
    expect(await seqs(gone.tenantId)).toEqual([]);
    expect(await headOf(gone.tenantId)).toMatchObject({ seq: 3, first_seq: 4, first_prev_hash: goneHead.hash });

    const proVerify = await get(pro, '/v1/audit/verify');
    expect(proVerify.body).toMatchObject({ valid: true, checked: { audit_entries: 2 } });
    expect((await get(pro, '/v1/audit')).body.entries.map((e: any) => e.seq)).toEqual([5, 4]);

    // Appends continue the pruned chains, which still verify (Pro+ to call verify: upgrade them).
    for (const t of [free, gone]) {
      expect((await engine.admin('PATCH', `/admin/v1/tenants/${t.tenantId}`, { tier: 'pro' })).status).toBe(200);
      const res = await get(t, '/v1/audit/verify');
      expect(res.body, t.tenantId).toMatchObject({ valid: true, integrity_failures: [] });
    }
    expect((await get(gone, '/v1/audit')).body.entries.map((e: any) => [e.seq, e.operation])).toEqual([[4, 'tenant.tier_changed']]);

    // A second run has nothing left to do for these tenants.
    await engine.node.runner.maintain();
    expect(await seqs(pro.tenantId)).toEqual([4, 5]);
    expect(await seqs(free.tenantId)).toEqual([4, 5]);
    expect((await get(pro, '/v1/audit/verify')).body.valid).toBe(true);
  });
});

describe('OpenAPI', () => {
  it('documents the four audit routes under the Audit tag', async () => {
    const res = await engine.request<{ paths: Record<string, Record<string, { tags?: string[]; description?: string }>>; tags: { name: string }[] }>(
      'GET',
      '/openapi.json',
    );
    expect(res.status).toBe(200);
    for (const path of ['/v1/audit', '/v1/audit/export', '/v1/audit/summary', '/v1/audit/verify']) {
      expect(res.body.paths[path]?.get?.tags, path).toEqual(['Audit']);
    }
    expect(res.body.tags.map((t: { name: string }) => t.name)).toContain('Audit');
    expect(res.body.paths['/v1/audit/summary'].get.description).toMatch(/5xx/);
  });
});
