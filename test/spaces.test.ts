import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BodyOf } from './client';
import { createEngine, errorOf, type TestEngine } from './harness';
import { sharingHelpers, UNKNOWN_UUID } from './sharing-helpers';

let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const h = sharingHelpers(() => engine);
const SPACE_FIELDS = [
  'access',
  'allowed_agent_ids',
  'allowed_tenant_ids',
  'created_at',
  'description',
  'memory_count',
  'name',
  'owner_tenant_id',
  'space_id',
  'tags',
  'team_write',
  'updated_at',
];

type SpaceMemories = BodyOf<'GET', `/v1/context-spaces/${string}/memories`>;
describe('create', () => {
  it('any tier creates a space it owns; ids are urn:uuid v7; audited; first_space milestone', async () => {
    const t = await engine.newTenant('free');
    const res = await h.createSpace(t, { name: '  research  ', description: 'notes', allowed_agent_ids: ['a1', 'a1', 'a2'], tags: ['x'] });
    expect(res.status, res.text).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(SPACE_FIELDS);
    expect(res.body).toMatchObject({
      name: 'research',
      description: 'notes',
      owner_tenant_id: t.tenantId,
      allowed_agent_ids: ['a1', 'a2'],
      allowed_tenant_ids: [],
      tags: ['x'],
      memory_count: 0,
      access: 'owner',
    });
    expect(res.body.space_id).toMatch(/^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const audit = await h.audit(t.tenantId);
    expect(audit.at(-1)).toMatchObject({ operation: 'space.created', resource_type: 'context_space', resource_id: res.body.space_id, actor: t.keyId });
    expect(await h.milestones(t)).toContain('first_space');

    const minimal = await h.createSpace(t, { name: 'b' });
    expect(minimal.body).toMatchObject({ description: null, allowed_agent_ids: [], allowed_tenant_ids: [], tags: [] });
  });

  it('rejects bad input with VALIDATION_ERROR naming the field', async () => {
    const t = await engine.newTenant('pro');
    const cases: [Record<string, unknown>, string][] = [
      [{}, 'name'],
      [{ name: '' }, 'name'],
      [{ name: '   ' }, 'name'],
      [{ name: 'x'.repeat(101) }, 'name'],
      [{ name: 'ok', description: 'x'.repeat(501) }, 'description'],
      [{ name: 'ok', allowed_agent_ids: Array.from({ length: 11 }, (_, i) => `a${i}`) }, 'allowed_agent_ids'],
      [{ name: 'ok', allowed_agent_ids: [''] }, 'allowed_agent_ids.0'],
      [{ name: 'ok', allowed_tenant_ids: ['bob'] }, 'allowed_tenant_ids.0'],
      [{ name: 'ok', allowed_tenant_ids: Array.from({ length: 101 }, (_, i) => `ten_aaaaaaaa${i}`) }, 'allowed_tenant_ids'],
      [{ name: 'ok', tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }, 'tags'],
      [{ name: 'ok', tags: ['x'.repeat(65)] }, 'tags.0'],
      [{ name: 'ok', tags: 'x' }, 'tags'],
    ];
    for (const [body, path] of cases) {
      const res = await h.createSpace(t, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(errorOf(res).code).toBe('VALIDATION_ERROR');
      expect(errorOf(res).details?.map((d: { path: string }) => d.path)).toContain(path);
    }
    const team = (await engine.request('POST', '/v1/teams', { key: t.key, body: { name: 'mine' } })).body.team_id;
    const ok = await h.createSpace(t, {
      name: 'x'.repeat(100),
      description: 'd'.repeat(500),
      allowed_tenant_ids: ['ten_2aB9xQ7mLp0cRt5VwZ1yK8', `team:${team}`],
    });
    expect(ok.status).toBe(201);
    expect(ok.body.allowed_tenant_ids).toEqual(['ten_2aB9xQ7mLp0cRt5VwZ1yK8', `team:${team}`]);
    const junk = await engine.request('POST', '/v1/context-spaces', { key: t.key, raw: '{nope', headers: { 'content-type': 'application/json' } });
    expect(junk.status).toBe(400);
  });

  it('granting other tenants needs Pro+: 403 FEATURE_NOT_AVAILABLE with required and current tier', async () => {
    for (const tier of ['free', 'starter'] as const) {
      const t = await engine.newTenant(tier);
      const res = await h.createSpace(t, { name: 's', allowed_tenant_ids: ['ten_2aB9xQ7mLp0cRt5VwZ1yK8'] });
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ code: 'FEATURE_NOT_AVAILABLE', required_tier: 'pro', current_tier: tier });
      const space = await h.createSpace(t, { name: 's', allowed_tenant_ids: [] });
      expect(space.status).toBe(201);
      const put = await engine.request('PUT', `/v1/context-spaces/${space.body.space_id}`, {
        key: t.key,
        body: { allowed_tenant_ids: ['ten_2aB9xQ7mLp0cRt5VwZ1yK8'] },
      });
      expect(put.status).toBe(403);
      expect(errorOf(put).code).toBe('FEATURE_NOT_AVAILABLE');
    }
  });
});

describe('read access', () => {
  it('owner reads by urn or bare uuid; a stranger gets 403; unknown and malformed 404', async () => {
    const [owner, stranger] = [await engine.newTenant('pro'), await engine.newTenant('pro')];
    const { space_id } = (await h.createSpace(owner, { name: 'mine' })).body;
    const bare = space_id.slice('urn:uuid:'.length);
    for (const id of [space_id, bare, bare.toUpperCase()]) {
      const res = await engine.request('GET', `/v1/context-spaces/${id}`, { key: owner.key });
      expect(res.status, id).toBe(200);
      expect(res.body.space_id).toBe(space_id);
    }
    const foreign = await engine.request('GET', `/v1/context-spaces/${space_id}`, { key: stranger.key });
    expect(foreign.status).toBe(403);
    expect(errorOf(foreign).code).toBe('FORBIDDEN');
    expect((await engine.request('GET', `/v1/context-spaces/${space_id}/memories`, { key: stranger.key })).status).toBe(403);
    const unknown = await engine.request('GET', `/v1/context-spaces/urn:uuid:${UNKNOWN_UUID}`, { key: owner.key });
    expect(unknown.status).toBe(404);
    expect(errorOf(unknown).code).toBe('NOT_FOUND');
    for (const path of ['/v1/context-spaces/nope', '/v1/context-spaces/urn:uuid:123/memories']) {
      const bad = await engine.request('GET', path, { key: owner.key });
      expect([bad.status, errorOf(bad).code], path).toEqual([404, 'NOT_FOUND']);
    }
    // Owner reads are not cross-tenant reads.
    expect((await h.audit(owner.tenantId)).map((a) => a.operation)).not.toContain('space.cross_tenant_read');
  });

  it("a granted tenant reads the space and its memories; each read is audited in the owner's chain", async () => {
    const [owner, reader] = [await engine.newTenant('pro'), await engine.newTenant('free')];
    const created = await h.createSpace(owner, { name: 'team notes', allowed_tenant_ids: [reader.tenantId, 'ten_someoneElse123'] });
    const { space_id } = created.body;
    expect(created.body.allowed_tenant_ids).toHaveLength(2);
    await h.store(owner, { observation: 'Quarterly numbers are in the drive.', space_id });

    const got = await engine.request('GET', `/v1/context-spaces/${space_id}`, { key: reader.key });
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ access: 'allowed_tenant', owner_tenant_id: owner.tenantId, memory_count: 1, allowed_tenant_ids: [reader.tenantId] });
    const mems = await engine.request('GET', `/v1/context-spaces/${space_id}/memories`, { key: reader.key });
    expect(mems.status).toBe(200);
    expect(mems.body.memories.map((m: { observation: string }) => m.observation)).toEqual(['Quarterly numbers are in the drive.']);

    const reads = (await h.audit(owner.tenantId)).filter((a) => a.operation === 'space.cross_tenant_read');
    expect(reads).toHaveLength(2);
    expect(reads[0]).toMatchObject({
      resource_id: space_id,
      actor: reader.keyId,
      metadata: { reader_tenant_id: reader.tenantId, via: 'allowed_tenant', read: 'space' },
    });
    expect(reads[1].metadata.read).toBe('memories');
    expect((await h.audit(reader.tenantId)).map((a) => a.operation)).not.toContain('space.cross_tenant_read');
  });

  it('lists owned and granted spaces (allowed_tenant_ids or an accepted space share) with total_count, never deleted ones', async () => {
    const [me, other, sharer] = [await engine.newTenant('pro'), await engine.newTenant('pro'), await engine.newTenant('pro')];
    const own1 = (await h.createSpace(me, { name: 'own1' })).body.space_id;
    const own2 = (await h.createSpace(me, { name: 'own2' })).body.space_id;
    const gone = (await h.createSpace(me, { name: 'gone' })).body.space_id;
    await engine.request('DELETE', `/v1/context-spaces/${gone}`, { key: me.key });
    const granted = (await h.createSpace(other, { name: 'granted', allowed_tenant_ids: [me.tenantId] })).body.space_id;
    await h.createSpace(other, { name: 'not mine' });
    const viaShare = (await h.createSpace(sharer, { name: 'shared space' })).body.space_id;
    const { share_id } = await h.shareAndJoin(sharer, me, viaShare);

    const list = await engine.request('GET', '/v1/context-spaces', { key: me.key });
    expect(list.status).toBe(200);
    expect(list.body.total_count).toBe(4);
    expect(list.body.spaces.map((s: { space_id: string; access: string }) => [s.space_id, s.access])).toEqual([
      [own1, 'owner'],
      [own2, 'owner'],
      [granted, 'allowed_tenant'],
      [viaShare, 'share'],
    ]);
    const page = await engine.request('GET', '/v1/context-spaces?limit=2&offset=1', { key: me.key });
    expect(page.body.spaces.map((s: { name: string }) => s.name)).toEqual(['own2', 'granted']);
    expect(page.body.total_count).toBe(4);
    expect(errorOf(await engine.request('GET', '/v1/context-spaces?limit=0', { key: me.key })).details?.[0].path).toBe('limit');

    // The share grants the space itself; revoking it takes the space away at once.
    expect((await engine.request('GET', `/v1/context-spaces/${viaShare}`, { key: me.key })).body.access).toBe('share');
    expect((await engine.request('DELETE', `/v1/spaces/share/${share_id}`, { key: sharer.key })).status).toBe(204);
    expect((await engine.request('GET', `/v1/context-spaces/${viaShare}`, { key: me.key })).status).toBe(403);
    expect((await engine.request('GET', '/v1/context-spaces', { key: me.key })).body.total_count).toBe(3);
  });
});

describe('update and delete', () => {
  it('PUT: owner only (403 OWNER_ONLY), 404 unknown, partial update returns the space, audited', async () => {
    const [owner, reader, stranger] = [await engine.newTenant('pro'), await engine.newTenant('pro'), await engine.newTenant('pro')];
    const { space_id } = (await h.createSpace(owner, { name: 'before', description: 'd', tags: ['a'], allowed_tenant_ids: [reader.tenantId] })).body;
    const put = (t: typeof owner, body: unknown, id = space_id) => engine.request('PUT', `/v1/context-spaces/${id}`, { key: t.key, body });

    const updated = await put(owner, { name: ' after ', description: null });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body).toMatchObject({ space_id, name: 'after', description: null, tags: ['a'], allowed_tenant_ids: [reader.tenantId], access: 'owner' });
    expect(Date.parse(updated.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(updated.body.created_at));
    expect((await engine.request('GET', `/v1/context-spaces/${space_id}`, { key: owner.key })).body.name).toBe('after');

    for (const t of [reader, stranger]) {
      const res = await put(t, { name: 'hijack' });
      expect(res.status).toBe(403);
      expect(errorOf(res).code).toBe('OWNER_ONLY');
    }
    expect((await put(owner, { name: 'x' }, `urn:uuid:${UNKNOWN_UUID}`)).status).toBe(404);
    for (const [body, path] of [
      [{}, '(body)'],
      [{ name: '' }, 'name'],
      [{ tags: ['x'.repeat(65)] }, 'tags.0'],
      [{ allowed_tenant_ids: ['nobody'] }, 'allowed_tenant_ids.0'],
    ] as const) {
      const res = await put(owner, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(errorOf(res).details?.[0].path).toBe(path);
    }
    expect((await put(owner, { name: 'x' }, 'not-a-uuid')).status).toBe(404);

    const entry = (await h.audit(owner.tenantId)).find((a) => a.operation === 'space.updated');
    expect(entry?.metadata).toMatchObject({
      changed: ['name', 'description'],
      before: { name: 'before', description: 'd' },
      after: { name: 'after', description: null },
    });
  });

  it('DELETE: owner only, soft delete (204), memories untouched, then 404 everywhere; audited', async () => {
    const [owner, reader] = [await engine.newTenant('pro'), await engine.newTenant('pro')];
    const { space_id } = (await h.createSpace(owner, { name: 'doomed', allowed_tenant_ids: [reader.tenantId] })).body;
    const mem = await h.store(owner, { observation: 'kept after the space goes', space_id });
    expect(mem.status, mem.text).toBe(201);

    const denied = await engine.request('DELETE', `/v1/context-spaces/${space_id}`, { key: reader.key });
    expect(denied.status).toBe(403);
    expect(errorOf(denied).code).toBe('OWNER_ONLY');
    const del = await engine.request('DELETE', `/v1/context-spaces/${space_id}`, { key: owner.key });
    expect(del.status).toBe(204);
    expect(del.text).toBe('');

    for (const t of [owner, reader]) {
      expect((await engine.request('GET', `/v1/context-spaces/${space_id}`, { key: t.key })).status).toBe(404);
      expect((await engine.request('GET', `/v1/context-spaces/${space_id}/memories`, { key: t.key })).status).toBe(404);
      expect((await engine.request('GET', '/v1/context-spaces', { key: t.key })).body.total_count).toBe(0);
    }
    expect((await engine.request('PUT', `/v1/context-spaces/${space_id}`, { key: owner.key, body: { name: 'x' } })).status).toBe(404);
    expect((await engine.request('DELETE', `/v1/context-spaces/${space_id}`, { key: owner.key })).status).toBe(404);
    const kept = await engine.request('GET', `/v1/memories/${mem.body.id}`, { key: owner.key });
    expect(kept.status).toBe(200);
    expect(kept.body.space_id).toBe(space_id);

    const ops = (await h.audit(owner.tenantId)).map((a) => a.operation);
    expect(ops.filter((o) => o.startsWith('space.'))).toEqual(['space.created', 'space.deleted']);
  });
});

describe('memories of a space', () => {
  it('lists live memories of the space newest first, filters by tags and agent, pages, and searches with q', async () => {
    const owner = await engine.newTenant('pro');
    const { space_id } = (await h.createSpace(owner, { name: 'kb' })).body;
    const other = (await h.createSpace(owner, { name: 'other' })).body.space_id;
    const add = async (observation: string, extra: Record<string, unknown> = {}) => {
      const res = await h.store(owner, { observation, space_id, auto_link: false, ...extra });
      expect(res.status, res.text).toBe(201);
      return res.body.id as string;
    };
    const cats = await add('cats purr when they are content', { tags: ['pets'], agent_id: 'a1' });
    const dogs = await add('dogs bark at the mail carrier', { tags: ['pets', 'noise'], agent_id: 'a2' });
    const tax = await add('the tax deadline is in april', { tags: ['money'] });
    await add('this one expires soon', { ttl_seconds: 60 });
    await h.store(owner, { observation: 'cats outside the space', space_id: other });
    await h.store(owner, { observation: 'cats with no space at all' });

    const url = (qs = '') => `/v1/context-spaces/${space_id}/memories${qs}`;
    const all = await h.later(61_000, () => engine.request<SpaceMemories>('GET', url(), { key: owner.key }));
    expect(all.status).toBe(200);
    expect(all.body.total_count).toBe(3);
    expect(all.body.memories.map((m: { uuid: string }) => m.uuid)).toEqual([tax, dogs, cats]);
    expect(all.body.memories[0]).toMatchObject({ space_id, owner_tenant_id: owner.tenantId, tags: ['money'] });
    expect(all.body.memories[0].similarity).toBeUndefined();
    expect(all.body.filters).toEqual({ space_id, q: null, tags: null, agent_id: null });
    expect((await h.later(61_000, () => engine.request('GET', `/v1/context-spaces/${space_id}`, { key: owner.key }))).body.memory_count).toBe(3);
    expect((await engine.request('GET', `/v1/context-spaces/${space_id}`, { key: owner.key })).body.memory_count).toBe(4);

    const tagged = await engine.request<SpaceMemories>('GET', url('?tags=noise,money'), { key: owner.key });
    expect(tagged.body.memories.map((m: { uuid: string }) => m.uuid)).toEqual([tax, dogs]);
    expect(tagged.body.filters.tags).toEqual(['noise', 'money']);
    expect((await engine.request<SpaceMemories>('GET', url('?agent_id=a1'), { key: owner.key })).body.memories.map((m: { uuid: string }) => m.uuid)).toEqual([
      cats,
    ]);
    const page = await h.later(61_000, () => engine.request<SpaceMemories>('GET', url('?limit=1&offset=1'), { key: owner.key }));
    expect(page.body.memories.map((m: { uuid: string }) => m.uuid)).toEqual([dogs]);
    expect(page.body.total_count).toBe(3);

    const search = await engine.request<SpaceMemories>('GET', url(`?q=${encodeURIComponent('do cats purr')}&tags=pets`), { key: owner.key });
    expect(search.status).toBe(200);
    expect(search.body.memories.map((m: { uuid: string }) => m.uuid)).toEqual([cats, dogs]);
    const [best, next] = search.body.memories;
    expect(best.similarity).toBeGreaterThan(next.similarity as number);
    expect(best.score).toBe(best.similarity);
    for (const m of search.body.memories) expect(m.similarity).toBeGreaterThanOrEqual(0), expect(m.similarity).toBeLessThanOrEqual(1);
    expect(search.body.filters).toEqual({ space_id, q: 'do cats purr', tags: ['pets'], agent_id: null });

    for (const [qs, path] of [
      ['?limit=1001', 'limit'],
      ['?limit=0', 'limit'],
      ['?offset=-1', 'offset'],
      ['?q=', 'q'],
    ]) {
      const bad = await engine.request('GET', url(qs), { key: owner.key });
      expect(bad.status, qs).toBe(400);
      expect(errorOf(bad).details?.[0].path).toBe(path);
    }
    expect((await engine.request('GET', url('?limit=1000'), { key: owner.key })).status).toBe(200);
  });
});
