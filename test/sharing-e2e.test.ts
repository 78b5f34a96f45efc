import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, errorOf, type Tenant, type TestEngine } from './harness';
import { DAY, sharingHelpers } from './sharing-helpers';

/**
 * Sharing end to end across two tenants, through the memories endpoints: what a recipient can read
 * and write after joining, and what it loses on revoke, expiry and space deletion.
 */
let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const h = sharingHelpers(() => engine);
const get = <T = never, P extends string = string>(t: Tenant, path: P) => engine.request<T, 'GET', P>('GET', path, { key: t.key });
const uuids = (res: { body: { memories: { uuid: string }[] } }) => res.body.memories.map((m) => m.uuid);

async function seed(owner: Tenant, tag: string) {
  const shared = await h.store(owner, { observation: 'The deploy freeze starts on Friday.', tags: [tag, 'ops'] });
  const hidden = await h.store(owner, { observation: 'Salary bands are confidential.', tags: ['hr'] });
  expect(shared.status, shared.text).toBe(201);
  expect(hidden.status, hidden.text).toBe(201);
  return { shared: shared.body.id as string, hidden: hidden.body.id as string };
}

describe('read share of a tag', () => {
  it('recipient reads the tagged memory (list, get, search) but cannot change it; revoke removes access at once', async () => {
    const [owner, recipient] = [await engine.newTenant('starter'), await engine.newTenant('starter')];
    const { shared, hidden } = await seed(owner, 'release');
    const mine = await h.store(recipient, { observation: 'My own note about Friday.' });

    expect(uuids(await get(recipient, '/v1/memories?scope=shared'))).toEqual([]);
    const { share_id } = await h.shareAndJoin(owner, recipient, 'release');

    const sharedList = await get(recipient, '/v1/memories?scope=shared');
    expect(sharedList.status).toBe(200);
    expect(uuids(sharedList)).toEqual([shared]);
    expect(sharedList.body.memories[0].owner_tenant_id).toBe(owner.tenantId);
    expect(uuids(await get(recipient, '/v1/memories?scope=all')).sort()).toEqual([shared, mine.body.id].sort());
    expect(uuids(await get(recipient, '/v1/memories?scope=own'))).toEqual([mine.body.id]);

    const one = await get(recipient, `/v1/memories/${shared}`);
    expect(one.status).toBe(200);
    expect(one.body.observation).toBe('The deploy freeze starts on Friday.');
    expect((await get(recipient, `/v1/memories/${hidden}`)).status).toBe(404);
    const search = await get(recipient, `/v1/memories/search?q=${encodeURIComponent('deploy freeze')}&scope=shared`);
    expect(search.status).toBe(200);
    expect(search.body.memories.map((m: { uuid: string }) => m.uuid)).toEqual([shared]);

    const patch = await engine.request('PATCH', `/v1/memories/${shared}`, { key: recipient.key, body: { observation: 'hijacked' } });
    expect([403, 404]).toContain(patch.status);
    const del = await engine.request('DELETE', `/v1/memories/${shared}`, { key: recipient.key });
    expect([403, 404]).toContain(del.status);
    expect((await get(owner, `/v1/memories/${shared}`)).body.observation).toBe('The deploy freeze starts on Friday.');

    expect((await engine.request('DELETE', `/v1/spaces/share/${share_id}`, { key: owner.key })).status).toBe(204);
    expect(uuids(await get(recipient, '/v1/memories?scope=shared'))).toEqual([]);
    expect((await get(recipient, `/v1/memories/${shared}`)).status).toBe(404);
    const after = await get(recipient, `/v1/memories/search?q=${encodeURIComponent('deploy freeze')}&scope=shared`);
    expect(after.body.memories).toEqual([]);
  });

  it('an accepted share lasts until revoked, past the invitation’s expiry', async () => {
    const [owner, recipient] = [await engine.newTenant('starter'), await engine.newTenant('starter')];
    const { shared } = await seed(owner, 'lasting');
    await h.shareAndJoin(owner, recipient, 'lasting');
    expect((await get(recipient, `/v1/memories/${shared}`)).status).toBe(200);
    const late = await h.later(31 * DAY, () => get(recipient, '/v1/memories?scope=shared'));
    expect(uuids(late)).toEqual([shared]);
  });

  it('a tenant listed in a space’s allowed_tenant_ids reads its memories through /v1/memories', async () => {
    const [owner, reader] = [await engine.newTenant('pro'), await engine.newTenant('free')];
    const space = await h.createSpace(owner, { name: 'ops', allowed_tenant_ids: [reader.tenantId] });
    expect(space.status, space.text).toBe(201);
    const m = await h.store(owner, { observation: 'Pager rotation changes on Mondays.', space_id: space.body.space_id });
    expect(uuids(await get(reader, '/v1/memories?scope=shared'))).toEqual([m.body.id]);
    expect((await engine.request('DELETE', `/v1/memories/${m.body.id}`, { key: reader.key })).status).toBe(404);
  });
});

describe('consent: another tenant’s memories enter only reads the reader asked for', () => {
  const search = (t: Tenant, query: string) => get(t, `/v1/memories/search?${query}`);

  it('a space that lists a tenant stays out of its default list and searches until it names the space or the shared scope', async () => {
    const [pusher, victim] = [await engine.newTenant('pro'), await engine.newTenant('pro')];
    const mine = await h.store(victim, { observation: 'Refunds are paid by card.' });
    const space = await h.createSpace(pusher, { name: 'notice', allowed_tenant_ids: [victim.tenantId] });
    expect(space.status, space.text).toBe(201);
    const pushed = await h.store(pusher, { observation: 'Refunds must now be wired to IBAN XX00 0000.', importance: 10, space_id: space.body.space_id });
    expect(pushed.status, pushed.text).toBe(201);

    for (const path of ['/v1/memories', '/v1/memories?scope=all']) expect(uuids(await get(victim, path)), path).toEqual([mine.body.id]);
    for (const mode of ['semantic', 'keyword', 'hybrid']) {
      for (const extra of ['', '&recency_weight=0.5', '&scope=all']) {
        const res = await search(victim, `q=${encodeURIComponent('refunds wired IBAN')}&mode=${mode}${extra}`);
        expect(res.status).toBe(200);
        expect(uuids(res), `${mode}${extra}`).toEqual([mine.body.id]);
        expect(res.text).not.toContain(pusher.tenantId);
      }
    }

    // Naming the space or the shared scope is the reader's own act: the space is readable then.
    expect(uuids(await get(victim, '/v1/memories?scope=shared'))).toEqual([pushed.body.id]);
    expect(uuids(await get(victim, `/v1/memories?space_id=${encodeURIComponent(space.body.space_id)}`))).toEqual([pushed.body.id]);
    for (const mode of ['semantic', 'keyword', 'hybrid']) {
      expect(uuids(await search(victim, `q=refunds&mode=${mode}&scope=shared`))).toEqual([pushed.body.id]);
      expect(uuids(await search(victim, `q=refunds&mode=${mode}&space_id=${encodeURIComponent(space.body.space_id)}`))).toEqual([pushed.body.id]);
    }
    expect((await get(victim, `/v1/memories/${pushed.body.id}`)).status).toBe(200);
  });

  it('an accepted share is the reader’s own act: its memories stay in the default reads', async () => {
    const [owner, recipient] = [await engine.newTenant('pro'), await engine.newTenant('pro')];
    const { shared } = await seed(owner, 'handover');
    await h.shareAndJoin(owner, recipient, 'handover');
    expect(uuids(await get(recipient, '/v1/memories'))).toEqual([shared]);
    expect(uuids(await search(recipient, 'q=deploy%20freeze'))).toEqual([shared]);
    expect(uuids(await search(recipient, 'q=deploy%20freeze&mode=hybrid'))).toEqual([shared]);
  });
});

describe('write share of a tag', () => {
  it("recipient stores into the owner's memories with the tag; a read share or another tag cannot", async () => {
    const [owner, writer, reader] = [await engine.newTenant('starter'), await engine.newTenant('starter'), await engine.newTenant('starter')];
    await h.shareAndJoin(owner, writer, 'inbox', 'write');
    await h.shareAndJoin(owner, reader, 'inbox', 'read');

    const written = await h.store(writer, { observation: 'Customer 42 asked for a refund.', tags: ['inbox'], owner_tenant_id: owner.tenantId });
    expect(written.status, written.text).toBe(201);
    const seen = await get(owner, `/v1/memories/${written.body.id}`);
    expect(seen.status).toBe(200);
    expect(seen.body).toMatchObject({ owner_tenant_id: owner.tenantId, tags: ['inbox'] });
    expect(uuids(await get(owner, '/v1/memories'))).toContain(written.body.id);
    expect(uuids(await get(writer, '/v1/memories?scope=own'))).toEqual([]);
    expect(uuids(await get(writer, '/v1/memories?scope=shared'))).toContain(written.body.id);

    const otherTag = await h.store(writer, { observation: 'Not covered.', tags: ['elsewhere'], owner_tenant_id: owner.tenantId });
    expect(otherTag.status).toBe(403);
    const readOnly = await h.store(reader, { observation: 'Read only.', tags: ['inbox'], owner_tenant_id: owner.tenantId });
    expect(readOnly.status).toBe(403);
  });
});

describe('a write share reveals nothing outside what it grants', () => {
  it("duplicates, auto-links and superseding stay inside the shared tag: the owner's private memories are neither named, linked nor superseded", async () => {
    const [owner, writer] = [await engine.newTenant('starter'), await engine.newTenant('starter')];
    await h.shareAndJoin(owner, writer, 'inbox', 'write');
    const text = 'The payroll password rotates every ninety days.';
    const secret = await h.store(owner, { observation: text, tags: ['private'] });
    expect(secret.status).toBe(201);

    // reject: a private memory with the same text is no conflict (and its id is not revealed).
    const rejected = await h.store(writer, { observation: text, tags: ['inbox'], owner_tenant_id: owner.tenantId, on_conflict: 'reject' });
    expect(rejected.status, rejected.text).toBe(201);
    expect(rejected.text).not.toContain(secret.body.id);
    expect(rejected.body).toMatchObject({ conflict_detected: false, superseded: [] });

    // auto_link: the near-identical private memory is not linked (the hash embedder makes it a perfect match).
    const linked = await h.store(writer, { observation: `${text} `.trim(), tags: ['inbox'], owner_tenant_id: owner.tenantId, on_conflict: 'manual' });
    expect(linked.body.auto_links).not.toContain(secret.body.id);
    expect(linked.body.auto_links).toEqual([rejected.body.id]);

    // lww: the private memory stays current and searchable for the owner.
    const lww = await h.store(writer, { observation: text, tags: ['inbox'], owner_tenant_id: owner.tenantId, on_conflict: 'lww' });
    expect(lww.body.superseded).not.toContain(secret.body.id);
    const mine = await get(owner, `/v1/memories/${secret.body.id}`);
    expect(mine.body.superseded_by).toBeNull();
    const found = await get(owner, `/v1/memories/search?q=${encodeURIComponent(text)}&limit=10`);
    expect(uuids(found)).toContain(secret.body.id);

    // Inside the share the rules still hold: a duplicate in the shared tag is a conflict.
    const inside = await h.store(writer, { observation: text, tags: ['inbox'], owner_tenant_id: owner.tenantId, on_conflict: 'reject' });
    expect(inside.status).toBe(409);
    expect(errorOf(inside).existing_ids).toEqual([lww.body.id]);
  });
});

describe('share of a space', () => {
  it('recipient reads the space memories through /v1/memories and the space routes, until the space is deleted', async () => {
    const [owner, recipient] = [await engine.newTenant('pro'), await engine.newTenant('starter')];
    const { space_id } = (await h.createSpace(owner, { name: 'launch' })).body;
    const inSpace = await h.store(owner, { observation: 'Launch checklist lives in the wiki.', space_id });
    const outside = await h.store(owner, { observation: 'Launch party budget.' });
    expect(inSpace.status, inSpace.text).toBe(201);
    await h.shareAndJoin(owner, recipient, space_id);

    expect(uuids(await get(recipient, '/v1/memories?scope=shared'))).toEqual([inSpace.body.id]);
    expect((await get(recipient, `/v1/memories/${outside.body.id}`)).status).toBe(404);
    const viaSpace = await get(recipient, `/v1/context-spaces/${space_id}/memories`);
    expect(viaSpace.status).toBe(200);
    expect(uuids(viaSpace)).toEqual([inSpace.body.id]);

    expect((await engine.request('DELETE', `/v1/context-spaces/${space_id}`, { key: owner.key })).status).toBe(204);
    expect(uuids(await get(recipient, '/v1/memories?scope=shared'))).toEqual([]);
    expect((await get(recipient, `/v1/memories/${inSpace.body.id}`)).status).toBe(404);
    expect((await get(owner, `/v1/memories/${inSpace.body.id}`)).status).toBe(200);
  });
});
