import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPglite } from '../shared/node/database';
import { loadMigrations, type MigrationSession, migrate } from '../shared/node/migrate';
import { createEngine, errorOf, type Tenant, type TestEngine } from './harness';

/** The knowledge graph through HTTP: triples, entities, paths, and memories that mention entities. */
let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const call = <T = never, M extends string = string, P extends string = string>(t: Tenant, method: M, path: P, body?: unknown) =>
  engine.request<T, M, P>(method, path, { key: t.key, body });

async function triple(t: Tenant, body: Record<string, unknown>) {
  const res = await call(t, 'POST', '/v1/knowledge/triples', body);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

async function store(t: Tenant, observation: string, extra: Record<string, unknown> = {}) {
  const res = await call(t, 'POST', '/v1/memories', { observation, auto_link: false, ...extra });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

const auditOps = async (tenantId: string) => {
  const res = await engine.sql<{ operation: string; metadata: Record<string, unknown> }>(
    sql`SELECT operation, metadata FROM audit_log WHERE tenant_id = ${tenantId} AND operation LIKE 'knowledge.%' ORDER BY seq`,
  );
  return res;
};

const entityByName = async (t: Tenant, name: string) => {
  const res = await call(t, 'GET', `/v1/knowledge/entities?q=${encodeURIComponent(name)}&limit=500`);
  return res.body.entities.filter((e: { name: string }) => e.name === name);
};

describe('triples', () => {
  it('creates lowercased, normalized entities of the default type, reuses them, and reads the triple back', async () => {
    const t = await engine.newTenant('pro');
    const first = await triple(t, { subject: '  Ada   Lovelace ', predicate: 'worked_on', object: 'Analytical ENGINE' });
    expect(first).toMatchObject({
      subject: { name: 'ada lovelace', entity_type: 'concept' },
      predicate: 'worked_on',
      object: { name: 'analytical engine', entity_type: 'concept' },
      confidence: 1,
      source_memory_id: null,
      metadata: {},
      created_at: engine.clock.now().toISOString(),
    });
    expect(first.triple_id).toMatch(/^urn:uuid:[0-9a-f-]{36}$/);
    expect(first.subject.entity_id).toMatch(/^urn:uuid:/);
    const got = await call(t, 'GET', `/v1/knowledge/triples/${first.triple_id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(first);

    const second = await triple(t, { subject: 'ADA LOVELACE', predicate: 'wrote', object: 'Note G', confidence: 0.75, metadata: { page: 7 } });
    expect(second.subject.entity_id).toBe(first.subject.entity_id);
    expect(second).toMatchObject({ confidence: 0.75, metadata: { page: 7 } });
    // An entity is its name: a type given for an entity still at the default type sets it (lowercased too).
    const typed = await triple(t, { subject: 'Ada Lovelace', subject_type: 'Person', predicate: 'born_in', object: 'London', object_type: 'city' });
    expect(typed.subject).toMatchObject({ entity_id: first.subject.entity_id, name: 'ada lovelace', entity_type: 'person' });
    expect(await entityByName(t, 'ada lovelace')).toMatchObject([{ entity_id: first.subject.entity_id, entity_type: 'person' }]);

    const ops = await auditOps(t.tenantId);
    expect(ops.map((o) => o.operation)).toEqual(['knowledge.triple_created', 'knowledge.triple_created', 'knowledge.triple_created']);
    expect(ops[0].metadata.entities_created).toEqual(expect.arrayContaining([first.subject.entity_id, first.object.entity_id]));
    expect(ops[1].metadata.entities_created).toEqual([second.object.entity_id]);
  });

  it('a triple from an entity to itself names one entity', async () => {
    const t = await engine.newTenant('pro');
    const loop = await triple(t, { subject: 'Ouroboros', predicate: 'eats', object: 'ouroboros' });
    expect(loop.subject.entity_id).toBe(loop.object.entity_id);
    const detail = await call(t, 'GET', `/v1/knowledge/entities/${loop.subject.entity_id}`);
    expect(detail.body).toMatchObject({ total_connections: 2, as_subject: [{ triple_id: loop.triple_id }], as_object: [{ triple_id: loop.triple_id }] });
    expect((await call(t, 'GET', '/v1/knowledge/entities')).body.entities).toMatchObject([{ name: 'ouroboros', triple_count: 1 }]);
  });

  it('parallel triples that create the same entity create it once', async () => {
    const t = await engine.newTenant('pro');
    const made = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        call(t, 'POST', '/v1/knowledge/triples', { subject: 'Acme Corp', predicate: 'employs', object: i % 2 ? 'Shared Person' : `Person ${i}` }),
      ),
    );
    expect(made.map((r) => r.status)).toEqual(Array(12).fill(201));
    expect(new Set(made.map((r) => r.body.subject.entity_id)).size).toBe(1);
    expect(new Set(made.filter((_, i) => i % 2).map((r) => r.body.object.entity_id)).size).toBe(1);
    const [acme] = await entityByName(t, 'acme corp');
    expect(acme.triple_count).toBe(12);
    expect((await call(t, 'GET', '/v1/knowledge/entities')).body.total).toBe(1 + 1 + 6);
  });

  it('lists newest first with filters by subject and object name (case-insensitive, any type), predicate and source memory', async () => {
    const t = await engine.newTenant('pro');
    const memory = await store(t, 'Grace Hopper found a moth in the Mark II.');
    const a = await triple(t, { subject: 'Grace Hopper', predicate: 'found', object: 'moth', source_memory_id: memory.id });
    engine.clock.advance(1_000);
    const b = await triple(t, { subject: 'Grace Hopper', subject_type: 'person', predicate: 'worked_on', object: 'Mark II' });
    engine.clock.advance(1_000);
    const c = await triple(t, { subject: 'Moth', predicate: 'found_in', object: 'Mark II' });
    const ids = (res: { body: { triples: { triple_id: string }[] } }) => res.body.triples.map((x) => x.triple_id);

    const all = await call(t, 'GET', '/v1/knowledge/triples');
    expect(ids(all)).toEqual([c.triple_id, b.triple_id, a.triple_id]);
    expect(all.body).toMatchObject({ total: 3, has_more: false, limit: 50, offset: 0 });
    expect(ids(await call(t, 'GET', '/v1/knowledge/triples?subject=GRACE%20%20hopper'))).toEqual([b.triple_id, a.triple_id]);
    expect(ids(await call(t, 'GET', '/v1/knowledge/triples?object=mark%20ii'))).toEqual([c.triple_id, b.triple_id]);
    expect(ids(await call(t, 'GET', '/v1/knowledge/triples?predicate=found'))).toEqual([a.triple_id]);
    expect(ids(await call(t, 'GET', '/v1/knowledge/triples?predicate=FOUND'))).toEqual([]);
    expect(ids(await call(t, 'GET', `/v1/knowledge/triples?source_memory_id=${memory.id}`))).toEqual([a.triple_id]);
    expect(ids(await call(t, 'GET', '/v1/knowledge/triples?subject=moth&object=mark%20ii'))).toEqual([c.triple_id]);
    const page = await call(t, 'GET', '/v1/knowledge/triples?limit=1&offset=1');
    expect(ids(page)).toEqual([b.triple_id]);
    expect(page.body).toMatchObject({ total: 3, has_more: true, limit: 1, offset: 1 });
    expect(a.source_memory_id).toBe(memory.id);
  });

  /** `levels` arrays, one inside the other. */
  const nested = (levels: number): unknown => (levels ? [nested(levels - 1)] : 1);

  it('refuses bad input with 400 VALIDATION_ERROR', async () => {
    const t = await engine.newTenant('pro');
    const ok = { subject: 'a', predicate: 'p', object: 'b' };
    const bad: [Record<string, unknown>, string][] = [
      [{ ...ok, subject: '   ' }, 'subject'],
      [{ ...ok, subject: 'x'.repeat(201) }, 'subject'],
      [{ ...ok, object: undefined }, 'object'],
      [{ ...ok, predicate: 'p'.repeat(101) }, 'predicate'],
      [{ ...ok, confidence: 1.01 }, 'confidence'],
      [{ ...ok, confidence: -0.1 }, 'confidence'],
      [{ ...ok, subject_type: 't'.repeat(51) }, 'subject_type'],
      [{ ...ok, metadata: { blob: 'x'.repeat(16 * 1024) } }, 'metadata'],
      [{ ...ok, metadata: ['not', 'an', 'object'] }, 'metadata'],
      [{ ...ok, metadata: { v: nested(32) } }, 'metadata'],
    ];
    for (const [body, field] of bad) {
      const res = await call(t, 'POST', '/v1/knowledge/triples', body);
      expect(res.status, `${field}: ${res.text}`).toBe(400);
      expect(errorOf(res).code).toBe('VALIDATION_ERROR');
      expect(errorOf(res).details?.map((d: { path: string }) => d.path)).toContain(field);
    }
    // Just under the metadata caps is fine (16 KB of JSON, 32 levels).
    expect((await call(t, 'POST', '/v1/knowledge/triples', { ...ok, metadata: { blob: 'x'.repeat(16 * 1024 - 20) } })).status).toBe(201);
    expect((await call(t, 'POST', '/v1/knowledge/triples', { ...ok, metadata: { v: nested(31) } })).status).toBe(201);
    for (const query of ['limit=0', 'limit=501', 'offset=-1']) {
      expect((await call(t, 'GET', `/v1/knowledge/triples?${query}`)).status, query).toBe(400);
    }
    // A memory id of any shape that names nothing: no triples cite it, and a triple cannot cite it.
    expect((await call(t, 'GET', '/v1/knowledge/triples?source_memory_id=nope')).body.total).toBe(0);
    const unknownSource = await call(t, 'POST', '/v1/knowledge/triples', { ...ok, source_memory_id: 'memory-1' });
    expect([unknownSource.status, errorOf(unknownSource).code]).toEqual([404, 'NOT_FOUND']);
    for (const query of ['limit=501', `q=${'x'.repeat(201)}`]) expect((await call(t, 'GET', `/v1/knowledge/entities?${query}`)).status, query).toBe(400);
    expect((await call(t, 'GET', '/v1/knowledge/triples/not-a-urn')).status).toBe(404);
    expect((await call(t, 'GET', '/v1/knowledge/triples?limit=500')).status).toBe(200);
  });

  it('deleting a triple keeps its entities; a second delete is 404', async () => {
    const t = await engine.newTenant('pro');
    const x = await triple(t, { subject: 'Alan Turing', predicate: 'proposed', object: 'Turing Test' });
    const res = await call(t, 'DELETE', `/v1/knowledge/triples/${x.triple_id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ deleted: true });
    expect((await call(t, 'GET', `/v1/knowledge/triples/${x.triple_id}`)).status).toBe(404);
    expect((await call(t, 'DELETE', `/v1/knowledge/triples/${x.triple_id}`)).status).toBe(404);
    const entities = (await call(t, 'GET', '/v1/knowledge/entities')).body.entities;
    expect(entities.map((e: { name: string; triple_count: number }) => [e.name, e.triple_count])).toEqual([
      ['alan turing', 0],
      ['turing test', 0],
    ]);
    expect((await auditOps(t.tenantId)).map((o) => o.operation)).toEqual(['knowledge.triple_created', 'knowledge.triple_deleted']);
  });
});

describe('entities', () => {
  it('lists in name order with triple counts; q is a case-insensitive literal prefix; entity_type filters', async () => {
    const t = await engine.newTenant('pro');
    await triple(t, { subject: 'Bob', subject_type: 'person', predicate: 'likes', object: 'Bobsleigh', object_type: 'sport' });
    await triple(t, { subject: 'bob', subject_type: 'person', predicate: 'owns', object: 'Boat' });
    await triple(t, { subject: '100% Cotton', predicate: 'is', object: '100_percent' });
    const list = (await call(t, 'GET', '/v1/knowledge/entities')).body;
    expect(list.entities.map((e: { name: string }) => e.name)).toEqual(['100% cotton', '100_percent', 'boat', 'bob', 'bobsleigh']);
    expect(list).toMatchObject({ total: 5, has_more: false });
    const bob = list.entities.find((e: { name: string }) => e.name === 'bob');
    expect(bob).toMatchObject({ entity_type: 'person', triple_count: 2, metadata: {} });
    const names = async (query: string) => (await call(t, 'GET', `/v1/knowledge/entities?${query}`)).body.entities.map((e: { name: string }) => e.name);
    expect(await names('q=BOB')).toEqual(['bob', 'bobsleigh']);
    expect(await names('q=bo&entity_type=Person')).toEqual(['bob']);
    expect(await names('entity_type=sport')).toEqual(['bobsleigh']);
    expect(await names(`q=${encodeURIComponent('100%')}`)).toEqual(['100% cotton']);
    expect(await names('q=100_')).toEqual(['100_percent']);
    expect(await names('q=zz')).toEqual([]);
    const page = (await call(t, 'GET', '/v1/knowledge/entities?limit=2&offset=2')).body;
    expect(page.entities.map((e: { name: string }) => e.name)).toEqual(['boat', 'bob']);
    expect(page).toMatchObject({ total: 5, has_more: true });
  });

  it('shows an entity with its triples as subject and as object, newest first, bounded by limit', async () => {
    const t = await engine.newTenant('pro');
    const x1 = await triple(t, { subject: 'Babbage', predicate: 'designed', object: 'Difference Engine', confidence: 0.5 });
    engine.clock.advance(1_000);
    const x2 = await triple(t, { subject: 'Babbage', predicate: 'designed', object: 'Analytical Engine' });
    engine.clock.advance(1_000);
    const x3 = await triple(t, { subject: 'Lovelace', predicate: 'corresponded_with', object: 'Babbage' });
    const id = x1.subject.entity_id;
    const res = await call(t, 'GET', `/v1/knowledge/entities/${id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      entity: { entity_id: id, name: 'babbage', entity_type: 'concept', metadata: {}, created_at: x1.created_at },
      as_subject: [
        { triple_id: x2.triple_id, predicate: 'designed', object: x2.object, confidence: 1, created_at: x2.created_at },
        { triple_id: x1.triple_id, predicate: 'designed', object: x1.object, confidence: 0.5, created_at: x1.created_at },
      ],
      as_object: [{ triple_id: x3.triple_id, subject: x3.subject, predicate: 'corresponded_with', confidence: 1, created_at: x3.created_at }],
      total_connections: 3,
      mentioned_in: [],
      mention_count: 0,
    });
    const limited = (await call(t, 'GET', `/v1/knowledge/entities/${id}?limit=1`)).body;
    expect(limited.as_subject.map((c: { triple_id: string }) => c.triple_id)).toEqual([x2.triple_id]);
    expect(limited.total_connections).toBe(3);
    expect((await call(t, 'GET', `/v1/knowledge/entities/${id}?limit=0`)).status).toBe(400);
  });

  it('deleting an entity deletes every triple that names it and keeps the others', async () => {
    const t = await engine.newTenant('pro');
    const a = await triple(t, { subject: 'Hub', predicate: 'p', object: 'Spoke 1' });
    await triple(t, { subject: 'Spoke 2', predicate: 'p', object: 'Hub' });
    await triple(t, { subject: 'Hub', predicate: 'self', object: 'hub' });
    const other = await triple(t, { subject: 'Spoke 1', predicate: 'p', object: 'Spoke 2' });
    const res = await call(t, 'DELETE', `/v1/knowledge/entities/${a.subject.entity_id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ deleted: true, triples_removed: 3 });
    expect((await call(t, 'GET', `/v1/knowledge/entities/${a.subject.entity_id}`)).status).toBe(404);
    expect((await call(t, 'DELETE', `/v1/knowledge/entities/${a.subject.entity_id}`)).status).toBe(404);
    const left = (await call(t, 'GET', '/v1/knowledge/triples')).body;
    expect(left.triples.map((x: { triple_id: string }) => x.triple_id)).toEqual([other.triple_id]);
    expect((await call(t, 'GET', '/v1/knowledge/entities')).body.entities.map((e: { name: string }) => e.name)).toEqual(['spoke 1', 'spoke 2']);
    const deleted = (await auditOps(t.tenantId)).at(-1)!;
    expect(deleted).toMatchObject({ operation: 'knowledge.entity_deleted', metadata: { triples_removed: 3, memories_unlinked: 0 } });
  });
});

describe('an entity is its name within the tenant, whatever type a triple gives or omits', () => {
  it('typed and untyped mentions name one entity: its neighbourhood, paths and delete cascade see every triple', async () => {
    const t = await engine.newTenant('pro');
    const typed = await triple(t, { subject: 'ACME corp', subject_type: 'company', predicate: 'employs', object: 'Ada', object_type: 'person' });
    engine.clock.advance(1_000);
    const untyped = await triple(t, { subject: 'Bob', predicate: 'works_at', object: 'acme  Corp' });
    expect(untyped.object).toEqual(typed.subject);
    expect(untyped.object).toMatchObject({ name: 'acme corp', entity_type: 'company' });
    expect(await entityByName(t, 'acme corp')).toHaveLength(1);
    const memory = await store(t, 'Acme Corp moved to Paris.');
    expect(memory.entities).toEqual([typed.subject.entity_id]);

    const acme = typed.subject.entity_id;
    const detail = (await call(t, 'GET', `/v1/knowledge/entities/${acme}`)).body;
    expect(detail).toMatchObject({ total_connections: 2, mention_count: 1, mentioned_in: [memory.id] });
    expect(detail.as_subject.map((c: { triple_id: string }) => c.triple_id)).toEqual([typed.triple_id]);
    expect(detail.as_object.map((c: { triple_id: string }) => c.triple_id)).toEqual([untyped.triple_id]);

    const path = (await call(t, 'GET', '/v1/knowledge/paths?from=ada&to=bob')).body;
    expect(path.paths.map((p: { triple_id: string }[]) => p.map((x) => x.triple_id))).toEqual([[typed.triple_id, untyped.triple_id]]);

    const gone = await call(t, 'DELETE', `/v1/knowledge/entities/${acme}`);
    expect(gone.body).toEqual({ deleted: true, triples_removed: 2 });
    expect((await call(t, 'GET', '/v1/knowledge/triples')).body.total).toBe(0);
    expect(await entityByName(t, 'acme corp')).toEqual([]);
    expect((await call(t, 'GET', `/v1/replay/memory/${memory.id}`)).body.entities).toEqual([]);
  });

  it('a type given for an entity at the default type sets it; another type never replaces it', async () => {
    const t = await engine.newTenant('pro');
    const plain = await triple(t, { subject: 'Turing', predicate: 'proposed', object: 'Imitation Game' });
    expect(plain.subject).toMatchObject({ entity_type: 'concept' });
    const typed = await triple(t, { subject: 'Alan', predicate: 'is', object: 'turing', object_type: 'Person' });
    expect(typed.object).toEqual({ ...plain.subject, entity_type: 'person' });
    const other = await triple(t, { subject: 'Turing', subject_type: 'machine', predicate: 'is', object: 'Alan', object_type: 'concept' });
    expect(other.subject).toEqual(typed.object);
    expect(other.object).toEqual(typed.subject);
    // The same name at both ends is one entity; the type given at either end applies.
    const loop = await triple(t, { subject: 'Echo', predicate: 'answers', object: 'echo', object_type: 'nymph' });
    expect(loop.subject).toEqual(loop.object);
    expect(loop.subject).toMatchObject({ entity_type: 'nymph' });
    const list = (await call(t, 'GET', '/v1/knowledge/entities')).body.entities.map((e: { name: string; entity_type: string }) => `${e.name}:${e.entity_type}`);
    expect(list).toEqual(['alan:concept', 'echo:nymph', 'imitation game:concept', 'turing:person']);
  });

  it('parallel triples naming one entity with and without a type create it once', async () => {
    const t = await engine.newTenant('pro');
    const made = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        call(t, 'POST', '/v1/knowledge/triples', { subject: 'Globex', subject_type: i % 2 ? 'company' : undefined, predicate: 'has', object: `Part ${i}` }),
      ),
    );
    expect(made.map((r) => r.status)).toEqual(Array(8).fill(201));
    expect(new Set(made.map((r) => r.body.subject.entity_id)).size).toBe(1);
    expect(await entityByName(t, 'globex')).toMatchObject([{ entity_type: 'company', triple_count: 8 }]);
  });
  it('the migration merges the duplicates an older graph has: one entity per name, triples and links moved to it', async () => {
    const database = await openPglite({ dataDir: 'memory://' });
    try {
      const session: MigrationSession = {
        query: <T>(t: string, p?: unknown[]) => database.client.query<T>(t, p),
        exec: (t: string) => database.client.exec(t),
      };
      const all = await loadMigrations();
      const merging = all.findIndex((m) => m.sql.includes('knowledge_entities_tenant_id_name_key'));
      await migrate(session, all.slice(0, merging));
      const [typed, plain, later, other] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
      await database.client.exec(`
        INSERT INTO tenants (id, email, created_at, updated_at) VALUES ('t1', 'a@example.com', now(), now());
        INSERT INTO knowledge_entities (id, tenant_id, name, entity_type, created_at) VALUES
          ('${plain}', 't1', 'acme', 'concept', '2026-01-01'), ('${typed}', 't1', 'acme', 'company', '2026-01-02'),
          ('${later}', 't1', 'acme', 'place', '2026-01-03'), ('${other}', 't1', 'bob', 'concept', '2026-01-01');
        INSERT INTO knowledge_triples (id, tenant_id, subject_id, predicate, object_id, created_at) VALUES
          (gen_random_uuid(), 't1', '${other}', 'works_at', '${plain}', now()), (gen_random_uuid(), 't1', '${typed}', 'employs', '${other}', now()),
          (gen_random_uuid(), 't1', '${later}', 'is', '${plain}', now());
        INSERT INTO edge_states (event_id, tenant_id, source_id, target_id, relation, valid_from) VALUES
          (1, 't1', gen_random_uuid(), '${plain}', 'mentions', now());`);
      expect(await migrate(session, all)).toEqual(all.slice(merging).map((m) => m.name));
      const rowsOf = async (text: string) => (await database.client.query<Record<string, unknown>>(text)).rows;
      expect(await rowsOf('SELECT id, name, entity_type FROM knowledge_entities ORDER BY name')).toEqual([
        { id: typed, name: 'acme', entity_type: 'company' },
        { id: other, name: 'bob', entity_type: 'concept' },
      ]);
      expect(await rowsOf('SELECT subject_id, predicate, object_id FROM knowledge_triples ORDER BY predicate')).toEqual([
        { subject_id: typed, predicate: 'employs', object_id: other },
        { subject_id: typed, predicate: 'is', object_id: typed },
        { subject_id: other, predicate: 'works_at', object_id: typed },
      ]);
      expect(await rowsOf('SELECT target_id FROM edge_states')).toEqual([{ target_id: typed }]);
      await expect(
        database.client.exec(
          `INSERT INTO knowledge_entities (id, tenant_id, name, entity_type, created_at) VALUES (gen_random_uuid(), 't1', 'bob', 'person', now())`,
        ),
      ).rejects.toThrow(/unique/);
    } finally {
      await database.close();
    }
  });
});

describe('tenants and tiers', () => {
  it("another tenant's triples, entities and memories are 404 exactly like ids that name nothing", async () => {
    const [owner, other] = [await engine.newTenant('pro'), await engine.newTenant('pro')];
    const memory = await store(owner, 'The vault code is private.');
    const x = await triple(owner, { subject: 'Vault', predicate: 'guarded_by', object: 'Code', source_memory_id: memory.id });
    const unknown = `urn:uuid:${crypto.randomUUID()}`;
    for (const path of [`/v1/knowledge/triples/${x.triple_id}`, `/v1/knowledge/entities/${x.subject.entity_id}`]) {
      for (const method of ['GET', 'DELETE']) {
        const res = await call(other, method, path);
        expect(res.status, `${method} ${path}`).toBe(404);
        expect(errorOf(res).code).toBe('NOT_FOUND');
      }
    }
    const foreign = await call(other, 'POST', '/v1/knowledge/triples', { subject: 'a', predicate: 'p', object: 'b', source_memory_id: memory.id });
    const missing = await call(other, 'POST', '/v1/knowledge/triples', { subject: 'a', predicate: 'p', object: 'b', source_memory_id: unknown });
    expect(foreign.status).toBe(404);
    expect({ code: errorOf(foreign).code, error: errorOf(foreign).error }).toEqual({ code: errorOf(missing).code, error: errorOf(missing).error });
    // The refused triple left nothing behind, not even its entities.
    expect((await call(other, 'GET', '/v1/knowledge/entities')).body.total).toBe(0);
    expect((await call(other, 'GET', '/v1/knowledge/triples')).body.total).toBe(0);
    expect((await call(other, 'GET', `/v1/knowledge/triples?source_memory_id=${memory.id}`)).body.total).toBe(0);
    expect((await call(other, 'GET', '/v1/knowledge/paths?from=vault&to=code')).status).toBe(404);
    expect((await call(other, 'GET', `/v1/knowledge/paths?from=${x.subject.entity_id}&to=${x.object.entity_id}`)).status).toBe(404);
    // And the owner's graph is untouched.
    expect((await call(owner, 'GET', `/v1/knowledge/triples/${x.triple_id}`)).status).toBe(200);
  });

  it('is refused below Pro with 403 FEATURE_NOT_AVAILABLE', async () => {
    for (const tier of ['free', 'starter'] as const) {
      const t = await engine.newTenant(tier);
      for (const [method, path, body] of [
        ['POST', '/v1/knowledge/triples', { subject: 'a', predicate: 'p', object: 'b' }],
        ['GET', '/v1/knowledge/triples', undefined],
        ['GET', '/v1/knowledge/entities', undefined],
        ['GET', '/v1/knowledge/paths?from=a&to=b', undefined],
      ] as const) {
        const res = await call(t, method, path, body);
        expect(res.status, `${tier} ${method} ${path}`).toBe(403);
        expect(res.body).toMatchObject({ code: 'FEATURE_NOT_AVAILABLE', required_tier: 'pro', current_tier: tier });
      }
    }
    const enterprise = await engine.newTenant('enterprise');
    expect((await call(enterprise, 'POST', '/v1/knowledge/triples', { subject: 'a', predicate: 'p', object: 'b' })).status).toBe(201);
  });
});

describe('the source memory of a triple', () => {
  it('reads null once the memory is deleted, past its TTL (before and after the purge) or rolled away; the triple stays', async () => {
    const t = await engine.newTenant('pro');
    const source = (x: { triple_id: string }) => call(t, 'GET', `/v1/knowledge/triples/${x.triple_id}`).then((r) => r.body.source_memory_id);

    const deleted = await store(t, 'Deleted source memory.');
    const x1 = await triple(t, { subject: 'one', predicate: 'from', object: 'deleted', source_memory_id: deleted.id });
    expect(await source(x1)).toBe(deleted.id);
    expect((await call(t, 'DELETE', `/v1/memories/${deleted.id}`)).status).toBe(200);
    expect(await source(x1)).toBeNull();
    expect((await call(t, 'GET', `/v1/knowledge/triples?source_memory_id=${deleted.id}`)).body.total).toBe(0);
    // A deleted memory cannot be named as a source any more.
    expect((await call(t, 'POST', '/v1/knowledge/triples', { subject: 'a', predicate: 'p', object: 'b', source_memory_id: deleted.id })).status).toBe(404);

    const expiring = await store(t, 'Expiring source memory.', { ttl_seconds: 60 });
    const x2 = await triple(t, { subject: 'two', predicate: 'from', object: 'expiring', source_memory_id: expiring.id });
    engine.clock.advance(61_000);
    expect(await source(x2)).toBeNull();
    expect((await call(t, 'GET', `/v1/knowledge/triples?source_memory_id=${expiring.id}`)).body.total).toBe(0);
    await engine.node.runner.maintain();
    expect(await source(x2)).toBeNull();
    const [{ n }] = await engine.sql<{ n: number }>(
      sql`SELECT count(*)::int AS n FROM knowledge_triples WHERE tenant_id = ${t.tenantId} AND source_memory_id IS NOT NULL`,
    );
    expect(n).toBe(0);

    const before = engine.clock.now().toISOString();
    engine.clock.advance(1_000);
    const later = await store(t, 'Memory a rollback removes.');
    const x3 = await triple(t, { subject: 'three', predicate: 'from', object: 'rolled away', source_memory_id: later.id });
    engine.clock.advance(1_000);
    expect((await call(t, 'POST', '/v1/rollback', { target: before })).body.operations_undone).toBe(1);
    expect(await source(x3)).toBeNull();
    expect((await call(t, 'GET', '/v1/knowledge/triples')).body.total).toBe(3);
  });
});

describe('memories mention entities', () => {
  async function graph(t: Tenant) {
    await triple(t, { subject: 'Ada Lovelace', subject_type: 'person', predicate: 'worked_on', object: 'Analytical Engine' });
    await triple(t, { subject: 'Bob', predicate: 'knows', object: 'AL' });
    await triple(t, { subject: 'Node.js', predicate: 'runs', object: 'C++' });
    return Object.fromEntries(
      (await call(t, 'GET', '/v1/knowledge/entities')).body.entities.map((e: { name: string; entity_id: string }) => [e.name, e.entity_id]),
    );
  }

  it('links a stored memory to the entities its text names: whole words, case-insensitive, punctuation and possessives ignored', async () => {
    const t = await engine.newTenant('pro');
    const id = await graph(t);
    const m = await store(t, "Notes: ADA LOVELACE's design for the (analytical engine), shown to Bob; AL and Adam were absent. Written in C++, not Node.js.");
    expect(m.entities).toEqual([id['ada lovelace'], id['analytical engine'], id.bob, id['c++'], id['node.js']]);
    const miss = await store(t, 'Bobby and Adalovelace wrote analytical-engine code in C.');
    expect(miss.entities).toEqual([]);

    const detail = (await call(t, 'GET', `/v1/knowledge/entities/${id.bob}`)).body;
    expect(detail).toMatchObject({ mentioned_in: [m.id], mention_count: 1 });
    // Linking is part of the store: its link events are in the memory's history.
    const life = (await call(t, 'GET', `/v1/replay/memory/${m.id}`)).body;
    expect(life.entities).toEqual([
      { entity_id: id['ada lovelace'], name: 'ada lovelace', entity_type: 'person', linked_at: m.created_at },
      { entity_id: id['analytical engine'], name: 'analytical engine', entity_type: 'concept', linked_at: m.created_at },
      { entity_id: id.bob, name: 'bob', entity_type: 'concept', linked_at: m.created_at },
      { entity_id: id['c++'], name: 'c++', entity_type: 'concept', linked_at: m.created_at },
      { entity_id: id['node.js'], name: 'node.js', entity_type: 'concept', linked_at: m.created_at },
    ]);
    const links = life.events.filter((e: { event_type: string }) => e.event_type === 'link');
    expect(links).toHaveLength(5);
    expect(links[0].detail).toMatchObject({
      target_id: id['ada lovelace'],
      relation: 'mentions',
      weight: 1,
      entity: { name: 'ada lovelace', entity_type: 'person' },
    });
    // The snapshot's edges carry them as `mentions` edges from the memory to the entity.
    const snap = (await call(t, 'GET', `/v1/replay/snapshot?at=${encodeURIComponent(engine.clock.now().toISOString())}`)).body;
    const mentions = snap.edges.filter((e: { relation: string }) => e.relation === 'mentions');
    expect(mentions.map((e: { source_id: string; target_id: string; weight: number }) => [e.source_id, e.target_id, e.weight])).toEqual(
      expect.arrayContaining([
        [m.id, id.bob, 1],
        [m.id, id['node.js'], 1],
      ]),
    );
    expect(mentions).toHaveLength(5);
    expect(snap.total_edges).toBe(5);
  });

  it('links a name once whatever types its triples gave; links at most 20 entities, those named first', async () => {
    const t = await engine.newTenant('pro');
    await triple(t, { subject: 'Apple', subject_type: 'company', predicate: 'sells', object: 'Apple', object_type: 'fruit' });
    const [apple] = await entityByName(t, 'apple');
    expect(apple).toMatchObject({ entity_type: 'company', triple_count: 1 });
    const both = await store(t, 'An apple a day.');
    expect(both.entities).toEqual([apple.entity_id]);
    const names = Array.from({ length: 25 }, (_, i) => `topic${String(i).padStart(2, '0')}`);
    for (const name of names) await triple(t, { subject: name, predicate: 'is', object: 'apple' });
    const many = await store(t, [...names].reverse().join(' '));
    expect(many.entities).toHaveLength(20);
    const linked = (await call(t, 'GET', `/v1/replay/memory/${many.id}`)).body.entities.map((e: { name: string }) => e.name);
    expect(linked.sort()).toEqual(names.slice(5).sort());
  });

  it('does not link below Pro, for entities created after the memory, or for names shorter than 3 characters', async () => {
    const pro = await engine.newTenant('pro');
    const before = await store(pro, 'Charles Babbage met Al.');
    await triple(pro, { subject: 'Charles Babbage', predicate: 'met', object: 'Al' });
    expect(before.entities).toEqual([]);
    expect((await call(pro, 'GET', `/v1/replay/memory/${before.id}`)).body.entities).toEqual([]);
    const after = await store(pro, 'Charles Babbage met Al again.');
    expect(after.entities).toHaveLength(1);

    const free = await engine.newTenant('free');
    expect((await store(free, 'Charles Babbage met Al.')).entities).toEqual([]);
  });

  it('deleting an entity unlinks its memories from now on; the past keeps the link; deleting the memory drops its links', async () => {
    const t = await engine.newTenant('pro');
    const x = await triple(t, { subject: 'Lighthouse', predicate: 'stands_on', object: 'Cliff' });
    const m = await store(t, 'The lighthouse on the cliff was repainted.');
    expect(m.entities).toEqual([x.subject.entity_id, x.object.entity_id]);
    const linkedAt = engine.clock.now().toISOString();
    engine.clock.advance(60_000);
    const del = await call(t, 'DELETE', `/v1/knowledge/entities/${x.subject.entity_id}`);
    expect(del.body).toEqual({ deleted: true, triples_removed: 1 });
    expect((await auditOps(t.tenantId)).at(-1)!.metadata).toMatchObject({ memories_unlinked: 1 });

    const life = (await call(t, 'GET', `/v1/replay/memory/${m.id}`)).body;
    expect(life.entities.map((e: { name: string }) => e.name)).toEqual(['cliff']);
    const unlink = life.events.find((e: { event_type: string }) => e.event_type === 'unlink');
    expect(unlink).toMatchObject({
      timestamp: engine.clock.now().toISOString(),
      detail: { target_id: x.subject.entity_id, relation: 'mentions', reason: 'entity deleted' },
    });
    const edgesAt = async (at: string) =>
      (await call(t, 'GET', `/v1/replay/snapshot?at=${encodeURIComponent(at)}`)).body.edges.map((e: { target_id: string }) => e.target_id).sort();
    expect(await edgesAt(linkedAt)).toEqual([x.subject.entity_id, x.object.entity_id].sort());
    expect(await edgesAt(engine.clock.now().toISOString())).toEqual([x.object.entity_id]);

    expect((await call(t, 'DELETE', `/v1/memories/${m.id}`)).status).toBe(200);
    expect((await call(t, 'GET', `/v1/knowledge/entities/${x.object.entity_id}`)).body).toMatchObject({ mentioned_in: [], mention_count: 0 });
    expect(await edgesAt(engine.clock.now().toISOString())).toEqual([]);
  });

  it('a rollback that restores a memory restores its links to entities that still exist', async () => {
    const t = await engine.newTenant('pro');
    const x = await triple(t, { subject: 'Harbour', predicate: 'has', object: 'Crane' });
    const m = await store(t, 'The harbour crane was inspected.');
    engine.clock.advance(1_000);
    const target = engine.clock.now().toISOString();
    engine.clock.advance(1_000);
    expect((await call(t, 'DELETE', `/v1/memories/${m.id}`)).status).toBe(200);
    expect((await call(t, 'DELETE', `/v1/knowledge/entities/${x.object.entity_id}`)).status).toBe(200);
    engine.clock.advance(1_000);
    const rolled = await call(t, 'POST', '/v1/rollback', { target });
    expect(rolled.body.artifacts_restored).toBe(1);
    const life = (await call(t, 'GET', `/v1/replay/memory/${m.id}`)).body;
    expect(life.entities.map((e: { entity_id: string }) => e.entity_id)).toEqual([x.subject.entity_id]);
    expect((await call(t, 'GET', `/v1/knowledge/entities/${x.subject.entity_id}`)).body.mentioned_in).toEqual([m.id]);
    const now = (await call(t, 'GET', `/v1/replay/snapshot?at=${encodeURIComponent(engine.clock.now().toISOString())}`)).body.edges;
    expect(now.map((e: { target_id: string }) => e.target_id)).toEqual([x.subject.entity_id]);
  });
});

describe('paths', () => {
  /**
   * ada -knows-> bob -works_at-> acme <-owns- carol -lives_in-> paris <-visited- ada; a cycle
   * ada -knows-> bob -knows-> dave -knows-> ada; and an island, lone -is-> alone.
   */
  async function graph(t: Tenant) {
    const add = (subject: string, predicate: string, object: string) => triple(t, { subject, predicate, object });
    const k1 = await add('Ada', 'knows', 'Bob');
    const w = await add('Bob', 'works_at', 'Acme');
    const o = await add('Carol', 'owns', 'Acme');
    const l = await add('Carol', 'lives_in', 'Paris');
    const v = await add('Ada', 'visited', 'Paris');
    const k2 = await add('Bob', 'knows', 'Dave');
    const k3 = await add('Dave', 'knows', 'Ada');
    await add('Lone', 'is', 'Alone');
    return { k1, w, o, l, v, k2, k3 };
  }
  const steps = (path: { triple_id: string }[]) => path.map((s) => s.triple_id);
  const paths = (t: Tenant, query: string) => call(t, 'GET', `/v1/knowledge/paths?${query}`);

  it('finds one-hop and multi-hop paths, in either direction, shortest first', async () => {
    const t = await engine.newTenant('pro');
    const g = await graph(t);
    const one = await paths(t, 'from=ada&to=bob');
    expect(one.status).toBe(200);
    expect(one.body.from).toMatchObject({ name: 'ada', entity_type: 'concept' });
    expect(one.body.to).toMatchObject({ name: 'bob' });
    // ada-bob directly, and ada <- dave <- bob (against the direction of both triples).
    expect(one.body.paths.map(steps)).toEqual([[g.k1.triple_id], [g.k3.triple_id, g.k2.triple_id]]);
    expect(one.body.total).toBe(2);
    expect(one.body.paths[0][0]).toEqual({ triple_id: g.k1.triple_id, subject: g.k1.subject, predicate: 'knows', object: g.k1.object });

    // ada to acme: ada-bob-acme (2), ada-dave-bob-acme (3), ada-paris-carol-acme (3, two triples walked backwards).
    const multi = (await paths(t, 'from=Ada&to=ACME')).body;
    expect(multi.paths.map(steps)).toEqual([
      [g.k1.triple_id, g.w.triple_id],
      ...[
        [g.k3.triple_id, g.k2.triple_id, g.w.triple_id],
        [g.v.triple_id, g.l.triple_id, g.o.triple_id],
      ].sort((a, b) => (a.join() < b.join() ? -1 : 1)),
    ]);
    expect(multi.paths.map((p: unknown[]) => p.length)).toEqual([2, 3, 3]);
    const backwards = multi.paths.find((p: { triple_id: string }[]) => p[0].triple_id === g.v.triple_id);
    expect(backwards?.map((s: { subject: { name: string }; object: { name: string } }) => `${s.subject.name}>${s.object.name}`)).toEqual([
      'ada>paris',
      'carol>paris',
      'carol>acme',
    ]);

    // The reverse question finds the same paths, walked from the other end.
    const reverse = (await paths(t, 'from=acme&to=ada')).body;
    expect(reverse.paths.map((p: { triple_id: string }[]) => steps(p).reverse().join()).sort()).toEqual(
      multi.paths.map((p: { triple_id: string }[]) => steps(p).join()).sort(),
    );
  });

  it('respects max_hops, and answers an empty list when no path exists', async () => {
    const t = await engine.newTenant('pro');
    await graph(t);
    const lengths = async (query: string) => (await paths(t, query)).body.paths.map((p: unknown[]) => p.length);
    expect(await lengths('from=ada&to=acme&max_hops=1')).toEqual([]);
    expect(await lengths('from=ada&to=acme&max_hops=2')).toEqual([2]);
    expect(await lengths('from=ada&to=acme')).toEqual([2, 3, 3]);
    // paris to dave: paris-ada-dave (2), paris-ada-bob-dave (3), paris-carol-acme-bob-dave (4).
    expect(await lengths('from=paris&to=dave&max_hops=4')).toEqual([2, 3, 4]);
    expect(await lengths('from=paris&to=dave&max_hops=3')).toEqual([2, 3]);
    const none = await paths(t, 'from=ada&to=lone&max_hops=4');
    expect(none.status).toBe(200);
    expect(none.body).toMatchObject({ paths: [], total: 0 });
    for (const bad of ['max_hops=0', 'max_hops=5', 'max_hops=two']) expect((await paths(t, `from=ada&to=bob&${bad}`)).status, bad).toBe(400);
  });

  it('takes ids or names; unknown ends are 404, the same entity twice 400', async () => {
    const t = await engine.newTenant('pro');
    const g = await graph(t);
    const byId = await paths(t, `from=${g.k1.subject.entity_id}&to=${g.w.object.entity_id}&max_hops=2`);
    expect(byId.body.paths.map(steps)).toEqual([[g.k1.triple_id, g.w.triple_id]]);
    expect((await paths(t, 'from=ada&to=nobody')).status).toBe(404);
    expect((await paths(t, `from=urn:uuid:${crypto.randomUUID()}&to=ada`)).status).toBe(404);
    const same = await paths(t, `from=ada&to=${g.k1.subject.entity_id}`);
    expect(same.status).toBe(400);
    expect(errorOf(same).code).toBe('VALIDATION_ERROR');
  });

  it('returns at most 10 paths', async () => {
    const t = await engine.newTenant('pro');
    for (let i = 0; i < 14; i++) {
      await triple(t, { subject: 'start', predicate: 'to', object: `middle ${i}` });
      await triple(t, { subject: `middle ${i}`, predicate: 'to', object: 'end' });
    }
    const res = (await paths(t, 'from=start&to=end')).body;
    expect(res.paths).toHaveLength(10);
    expect(res.total).toBe(10);
    expect(res.paths.every((p: unknown[]) => p.length === 2)).toBe(true);
  });
});
