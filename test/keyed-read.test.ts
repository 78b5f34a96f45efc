import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, errorOf, type Tenant, type TestEngine } from './harness';
import { sharingHelpers, UNKNOWN_UUID } from './sharing-helpers';

/**
 * GET /v1/memories/{id} reads the caller's grants inside the statement that reads the row: each grant
 * still exposes only its owner's memories with its tag or in its space, and everything else answers
 * as an id that names nothing (docs/architecture.md#not-found-never-forbidden).
 */
let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const h = sharingHelpers(() => engine);
const get = (t: Tenant, id: string) => engine.request('GET', `/v1/memories/${id}`, { key: t.key });

async function stored(t: Tenant, body: Record<string, unknown>): Promise<string> {
  const res = await h.store(t, body);
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
}

describe('a keyed read checks the grants in its own statement', () => {
  it('a grant exposes only its owner’s memories with its tag or in its space; the rest is 404 as an unknown id', async () => {
    const [owner, other, recipient, stranger] = [
      await engine.newTenant('pro'),
      await engine.newTenant('pro'),
      await engine.newTenant('starter'),
      await engine.newTenant('starter'),
    ];
    const shared = (await h.createSpace(owner, { name: 'shared' })).body.space_id as string;
    const closed = (await h.createSpace(owner, { name: 'closed' })).body.space_id as string;
    const ids = {
      tagged: await stored(owner, { observation: 'The release train leaves on Tuesday.', tags: ['release'] }),
      untagged: await stored(owner, { observation: 'Salary bands are confidential.', tags: ['hr'] }),
      inShared: await stored(owner, { observation: 'The launch checklist lives in the wiki.', space_id: shared }),
      inClosed: await stored(owner, { observation: 'The acquisition closes in May.', space_id: closed }),
      // Same tag, another owner who granted nothing: a grant is its owner's only.
      otherTagged: await stored(other, { observation: 'Another release note.', tags: ['release'] }),
    };
    const { share_id } = await h.shareAndJoin(owner, recipient, 'release');
    await h.shareAndJoin(owner, recipient, shared);

    const unknown = await get(recipient, UNKNOWN_UUID);
    expect(unknown.status).toBe(404);
    const hidden = async (t: Tenant, id: string) => {
      const res = await get(t, id);
      expect(res.status, `${id}: ${res.text}`).toBe(404);
      expect(errorOf(res).code).toBe(errorOf(unknown).code);
      expect(res.text).not.toContain(owner.tenantId);
    };

    for (const id of [ids.tagged, ids.inShared]) {
      const res = await get(recipient, id);
      expect(res.status, res.text).toBe(200);
      expect(res.body.owner_tenant_id).toBe(owner.tenantId);
    }
    for (const id of [ids.untagged, ids.inClosed, ids.otherTagged]) await hidden(recipient, id);
    for (const id of Object.values(ids)) await hidden(stranger, id);

    // Revoking the tag share ends that grant at once; the space share still reads.
    expect((await engine.request('DELETE', `/v1/spaces/share/${share_id}`, { key: owner.key })).status).toBe(204);
    await hidden(recipient, ids.tagged);
    expect((await get(recipient, ids.inShared)).status).toBe(200);
    // Deleting the space ends the space share.
    expect((await engine.request('DELETE', `/v1/context-spaces/${shared}`, { key: owner.key })).status).toBe(204);
    await hidden(recipient, ids.inShared);
    expect((await get(owner, ids.inShared)).status).toBe(200);
  });
});
