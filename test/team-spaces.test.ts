import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventBodySql } from '../shared/jobs/events';
import { hashEmbedder } from '../shared/memory/embeddings';
import { createEngine, errorOf, type Tenant, type TestEngine, type TestResponse } from './harness';
import { sharingHelpers, UNKNOWN_UUID } from './sharing-helpers';

/**
 * Team writes (docs/architecture.md#consent-for-shared-spaces): a space that grants `team:<team_id>` and opts in with `team_write`
 * lets the team's owner, admins and members store into it. The memory is the space owner's (store,
 * quota, audit chain); readonly members, tenants listed by id, and spaces without the opt-in only
 * read; removing a member or demoting them ends the writes at once.
 */

let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const h = sharingHelpers(() => engine);
const call = <T = never, M extends string = string, P extends string = string>(t: Tenant, method: M, path: P, body?: unknown) =>
  engine.request<T, M, P>(method, path, { key: t.key, body });
const uuids = (res: { body: { memories: { uuid: string }[] } }) => res.body.memories.map((m) => m.uuid);
const period = () => engine.clock.now().toISOString().slice(0, 7);

async function addMember(owner: Tenant, teamId: string, who: Tenant, role = 'member', e = engine) {
  const call = <T = never, M extends string = string, P extends string = string>(t: Tenant, method: M, path: P, body?: unknown) =>
    e.request<T, M, P>(method, path, { key: t.key, body });
  const invited = await call(owner, 'POST', `/v1/teams/${teamId}/invite`, { email: who.email, role });
  expect(invited.status, invited.text).toBe(201);
  const joined = await call(who, 'POST', '/v1/teams/join', { invitation_id: invited.body.invitation_id });
  expect(joined.status, joined.text).toBe(200);
}

/** An owner with a team (admin, member, readonly) and a space that grants the team and allows team writes. */
async function teamSpace(opts: { teamWrite?: boolean } = {}) {
  const [owner, admin, member, readonly, outsider] = await Promise.all(['pro', 'pro', 'pro', 'pro', 'pro'].map(() => engine.newTenant('pro')));
  const team = (await call(owner, 'POST', '/v1/teams', { name: 'Support agents' })).body.team_id as string;
  await addMember(owner, team, admin, 'admin');
  await addMember(owner, team, member);
  await addMember(owner, team, readonly, 'readonly');
  const space = await h.createSpace(owner, { name: 'handbook', allowed_tenant_ids: [`team:${team}`], team_write: opts.teamWrite ?? true });
  expect(space.status, space.text).toBe(201);
  return { owner, admin, member, readonly, outsider, team, spaceId: space.body.space_id as string };
}

/** What storing into a space that does not exist answers (a space the caller cannot read must answer the same). */
async function unknownSpaceAnswer(t: Tenant) {
  const res = await h.store(t, { observation: 'Into nowhere.', space_id: `urn:uuid:${UNKNOWN_UUID}` });
  expect(res.status).toBe(400);
  return { status: res.status, code: errorOf(res).code, details: errorOf(res).details };
}

async function memoryCreates(tenantId: string) {
  return (await h.audit(tenantId)).filter((e) => e.operation === 'memory.create');
}

describe('the team_write field of a space', () => {
  it('defaults to false, is set on create and PUT by the owner, audited, and shown to every reader', async () => {
    const owner = await engine.newTenant('pro');
    const team = (await call(owner, 'POST', '/v1/teams', { name: 'Ops' })).body.team_id;
    const plain = await h.createSpace(owner, { name: 'plain', allowed_tenant_ids: [`team:${team}`] });
    expect(plain.body.team_write).toBe(false);
    const put = await call(owner, 'PUT', `/v1/context-spaces/${plain.body.space_id}`, { team_write: true });
    expect(put.status, put.text).toBe(200);
    expect(put.body).toMatchObject({ team_write: true, allowed_tenant_ids: [`team:${team}`], name: 'plain' });
    const updated = (await h.audit(owner.tenantId)).filter((e) => e.operation === 'space.updated').at(-1);
    expect(updated?.metadata).toMatchObject({ changed: ['team_write'], before: { team_write: false }, after: { team_write: true } });
    const created = (await h.audit(owner.tenantId)).find((e) => e.operation === 'space.created');
    expect(created?.metadata).toMatchObject({ team_write: false });

    const member = await engine.newTenant('pro');
    await addMember(owner, team, member, 'readonly');
    const seen = await call(member, 'GET', `/v1/context-spaces/${plain.body.space_id}`);
    expect(seen.body).toMatchObject({ team_write: true, access: 'allowed_tenant' });
    const bad = await call(owner, 'PUT', `/v1/context-spaces/${plain.body.space_id}`, { team_write: 'yes' });
    expect(bad.status).toBe(400);
    expect(errorOf(bad).details?.[0].path).toBe('team_write');
    const notOwner = await call(member, 'PUT', `/v1/context-spaces/${plain.body.space_id}`, { team_write: false });
    expect(notOwner.status).toBe(403);
    expect(errorOf(notOwner).code).toBe('OWNER_ONLY');
  });
});

describe('a team member stores into a space that grants the team', () => {
  it("the memory lands in the owner's space and store, on the owner's quota, in the owner's audit chain with the writer", async () => {
    const { owner, admin, member, team, spaceId } = await teamSpace();
    const before = (await call(owner, 'GET', '/v1/usage')).body.memories.current;

    const written = await h.store(member, {
      observation: 'Refunds over 500 EUR need a second pair of eyes.',
      space_id: spaceId,
      agent_id: 'support-bot',
      tags: ['refunds'],
    });
    expect(written.status, written.text).toBe(201);
    const id = written.body.id;

    // The owner's memory, in the space.
    const seen = await call(owner, 'GET', `/v1/memories/${id}`);
    expect(seen.status).toBe(200);
    expect(seen.body).toMatchObject({ owner_tenant_id: owner.tenantId, space_id: spaceId, agent_id: 'support-bot', tags: ['refunds'] });
    expect(uuids(await call(owner, 'GET', `/v1/context-spaces/${spaceId}/memories`))).toEqual([id]);
    expect((await call(owner, 'GET', `/v1/context-spaces/${spaceId}`)).body.memory_count).toBe(1);
    expect(uuids(await call(owner, 'GET', '/v1/memories?scope=own'))).toEqual([id]);
    // Not the writer's: it reads it as a shared memory of the space.
    expect(uuids(await call(member, 'GET', '/v1/memories?scope=own'))).toEqual([]);
    expect(uuids(await call(member, 'GET', '/v1/memories?scope=shared'))).toEqual([id]);

    // The owner's quota counts it; the writer's does not.
    expect((await call(owner, 'GET', '/v1/usage')).body.memories.current).toBe(before + 1);
    expect((await call(member, 'GET', '/v1/usage')).body.memories.current).toBe(0);

    // The owner's chain records the write, with the writer's key as actor and its tenant and team.
    const [entry] = await memoryCreates(owner.tenantId);
    expect(entry).toMatchObject({
      resource_type: 'memory',
      resource_id: id,
      actor: member.keyId,
      metadata: { writer_tenant_id: member.tenantId, via: 'team', team_ids: [team], agent_id: 'support-bot' },
    });
    expect(await memoryCreates(member.tenantId)).toEqual([]);
    const verified = await call(owner, 'GET', '/v1/audit/verify');
    expect(verified.status, verified.text).toBe(200);
    expect(verified.body.valid).toBe(true);

    // The owner's webhook event, not the writer's.
    const events = await engine.sql<{ tenant_id: string }>(
      sql`SELECT tenant_id FROM events e WHERE type = 'memory.created' AND ${eventBodySql('e')}->'data'->'memory'->>'uuid' = ${id}`,
    );
    expect(events).toEqual([{ tenant_id: owner.tenantId }]);

    // An admin writes too; naming the owner explicitly is the same write.
    const byAdmin = await h.store(admin, { observation: 'Escalations go to the on-call lead.', space_id: spaceId, owner_tenant_id: owner.tenantId });
    expect(byAdmin.status, byAdmin.text).toBe(201);
    expect((await call(owner, 'GET', `/v1/memories/${byAdmin.body.id}`)).body.space_id).toBe(spaceId);
    expect((await memoryCreates(owner.tenantId)).at(-1)).toMatchObject({ actor: admin.keyId, metadata: { writer_tenant_id: admin.tenantId, via: 'team' } });
  });

  it('update and delete stay with the owner: the writer gets 404 as for any memory not its own', async () => {
    const { owner, member, spaceId } = await teamSpace();
    const written = await h.store(member, { observation: 'The VPN config lives in the ops vault.', space_id: spaceId });
    expect(written.status).toBe(201);
    const patch = await call(member, 'PATCH', `/v1/memories/${written.body.id}`, { importance: 9 });
    expect(patch.status).toBe(404);
    expect((await call(member, 'DELETE', `/v1/memories/${written.body.id}`)).status).toBe(404);
    expect((await call(owner, 'PATCH', `/v1/memories/${written.body.id}`, { importance: 9 })).status).toBe(200);
    expect((await call(owner, 'DELETE', `/v1/memories/${written.body.id}`)).status).toBe(200);
  });

  it("counts against the owner's monthly quota: 429 with the owner's plan when the owner's quota is spent", async () => {
    const { owner, member, spaceId } = await teamSpace();
    await engine.node.services.db.execute(sql`
      INSERT INTO usage_counters (tenant_id, metric, bucket, value) VALUES (${owner.tenantId}, 'memories', ${period()}, 500000)
      ON CONFLICT (tenant_id, metric, bucket) DO UPDATE SET value = EXCLUDED.value`);
    const refused = await h.store(member, { observation: 'One too many.', space_id: spaceId });
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: 'RATE_LIMITED', usage: { limit: 500_000, plan: 'pro' } });
    // The writer's own quota is untouched and still works for its own store.
    expect((await h.store(member, { observation: 'My own note.' })).status).toBe(201);
  });

  it('the allowed_agent_ids of the space still apply', async () => {
    const { owner, member, spaceId } = await teamSpace();
    expect((await call(owner, 'PUT', `/v1/context-spaces/${spaceId}`, { allowed_agent_ids: ['support-bot'] })).status).toBe(200);
    const wrongAgent = await h.store(member, { observation: 'From the wrong agent.', space_id: spaceId, agent_id: 'other-bot' });
    expect(wrongAgent.status).toBe(403);
    expect((await h.store(member, { observation: 'From the right agent.', space_id: spaceId, agent_id: 'support-bot' })).status).toBe(201);
  });
});

describe('who may grant a team a space', () => {
  it('owner, admin and member may list team:<id>; a readonly member or an outsider gets the answer of an unknown team, on create and PUT', async () => {
    const { admin, member, readonly, outsider, team } = await teamSpace();
    for (const who of [admin, member]) {
      const made = await h.createSpace(who, { name: 'for the team', allowed_tenant_ids: [`team:${team}`] });
      expect(made.status, made.text).toBe(201);
    }
    const unknown = await h.createSpace(readonly, { name: 'x', allowed_tenant_ids: ['team:team_doesnotexist00'] });
    expect(unknown.status).toBe(400);
    expect(errorOf(unknown).code).toBe('VALIDATION_ERROR');
    const answer = (res: TestResponse<unknown>) => ({
      status: res.status,
      code: errorOf(res).code,
      details: errorOf(res).details?.map((d) => ({ ...d, message: d.message.replace(team, '<team>').replace('team_doesnotexist00', '<team>') })),
    });
    for (const who of [readonly, outsider]) {
      const pushed = await h.createSpace(who, { name: 'push', allowed_tenant_ids: [`team:${team}`] });
      expect(answer(pushed)).toEqual(answer(unknown));
      const own = await h.createSpace(who, { name: 'own' });
      const put = await call(who, 'PUT', `/v1/context-spaces/${own.body.space_id}`, { allowed_tenant_ids: [`team:${team}`] });
      expect(answer(put)).toEqual(answer(unknown));
    }
  });
});

describe('who may not store', () => {
  it('a readonly member, a tenant listed by id, and every member when the space does not allow team writes get 403 FORBIDDEN', async () => {
    const { owner, team, readonly, spaceId } = await teamSpace();
    const refused = await h.store(readonly, { observation: 'Readonly tries to write.', space_id: spaceId });
    expect(refused.status).toBe(403);
    expect(errorOf(refused).code).toBe('FORBIDDEN');
    expect(errorOf(refused).message).toMatch(/read this context space but not store/);
    const explicit = await h.store(readonly, { observation: 'Readonly names the owner.', space_id: spaceId, owner_tenant_id: owner.tenantId });
    expect(explicit.status).toBe(403);

    const listed = await engine.newTenant('pro');
    await call(owner, 'PUT', `/v1/context-spaces/${spaceId}`, { allowed_tenant_ids: [`team:${team}`, listed.tenantId] });
    expect((await call(listed, 'GET', `/v1/context-spaces/${spaceId}/memories`)).status).toBe(200);
    const byListed = await h.store(listed, { observation: 'Listed tenants only read.', space_id: spaceId });
    expect(byListed.status).toBe(403);
    expect(errorOf(byListed).code).toBe('FORBIDDEN');

    const closed = await teamSpace({ teamWrite: false });
    const noOptIn = await h.store(closed.member, { observation: 'No opt-in.', space_id: closed.spaceId });
    expect(noOptIn.status).toBe(403);
    expect(errorOf(noOptIn).code).toBe('FORBIDDEN');
    expect(uuids(await call(closed.owner, 'GET', `/v1/context-spaces/${closed.spaceId}/memories`))).toEqual([]);

    expect((await memoryCreates(owner.tenantId)).length + (await memoryCreates(closed.owner.tenantId)).length).toBe(0);
  });

  it('a tenant outside the team gets exactly the answer of an unknown space; naming the owner is 403 as without a share', async () => {
    const { owner, outsider, spaceId } = await teamSpace();
    const foreign = await h.store(outsider, { observation: 'Outsider tries.', space_id: spaceId });
    expect({ status: foreign.status, code: errorOf(foreign).code, details: errorOf(foreign).details }).toEqual(await unknownSpaceAnswer(outsider));
    const named = await h.store(outsider, { observation: 'Outsider names the owner.', space_id: spaceId, owner_tenant_id: owner.tenantId });
    expect(named.status).toBe(403);
    expect(errorOf(named).message).toMatch(/No write share/);
    expect(await memoryCreates(owner.tenantId)).toEqual([]);
  });
});

describe('membership changes take effect at once', () => {
  it('demoted to readonly: 403 on the next store; promoted back: writes again; removed: the space is unknown to them', async () => {
    const { owner, admin, member, team, spaceId } = await teamSpace();
    expect((await h.store(member, { observation: 'First note.', space_id: spaceId })).status).toBe(201);

    expect((await call(admin, 'PUT', `/v1/teams/${team}/members/${member.tenantId}`, { role: 'readonly' })).status).toBe(200);
    const demoted = await h.store(member, { observation: 'Second note.', space_id: spaceId });
    expect(demoted.status).toBe(403);
    expect(errorOf(demoted).code).toBe('FORBIDDEN');

    expect((await call(admin, 'PUT', `/v1/teams/${team}/members/${member.tenantId}`, { role: 'member' })).status).toBe(200);
    expect((await h.store(member, { observation: 'Third note.', space_id: spaceId })).status).toBe(201);

    expect((await call(owner, 'DELETE', `/v1/teams/${team}/members/${member.tenantId}`)).status).toBe(204);
    const removed = await h.store(member, { observation: 'Fourth note.', space_id: spaceId });
    expect({ status: removed.status, code: errorOf(removed).code, details: errorOf(removed).details }).toEqual(await unknownSpaceAnswer(member));
    expect((await h.store(member, { observation: 'Fifth note.', space_id: spaceId, owner_tenant_id: owner.tenantId })).status).toBe(403);

    const observations = (await call(owner, 'GET', `/v1/context-spaces/${spaceId}/memories`)).body.memories.map((m: { observation: string }) => m.observation);
    expect(observations.sort()).toEqual(['First note.', 'Third note.']);
  });

  it('the owner turning team_write off, removing the team from the space, or deleting the space ends the writes', async () => {
    const { owner, member, team, spaceId } = await teamSpace();
    expect((await call(owner, 'PUT', `/v1/context-spaces/${spaceId}`, { team_write: false })).status).toBe(200);
    expect((await h.store(member, { observation: 'Off.', space_id: spaceId })).status).toBe(403);
    expect((await call(owner, 'PUT', `/v1/context-spaces/${spaceId}`, { team_write: true })).status).toBe(200);
    expect((await h.store(member, { observation: 'On again.', space_id: spaceId })).status).toBe(201);

    expect((await call(owner, 'PUT', `/v1/context-spaces/${spaceId}`, { allowed_tenant_ids: [] })).status).toBe(200);
    const ungranted = await h.store(member, { observation: 'Not granted.', space_id: spaceId });
    expect({ status: ungranted.status, code: errorOf(ungranted).code, details: errorOf(ungranted).details }).toEqual(await unknownSpaceAnswer(member));

    expect((await call(owner, 'PUT', `/v1/context-spaces/${spaceId}`, { allowed_tenant_ids: [`team:${team}`] })).status).toBe(200);
    expect((await h.store(member, { observation: 'Granted again.', space_id: spaceId })).status).toBe(201);
    expect((await call(owner, 'DELETE', `/v1/context-spaces/${spaceId}`)).status).toBe(204);
    const deleted = await h.store(member, { observation: 'Deleted space.', space_id: spaceId });
    expect({ status: deleted.status, code: errorOf(deleted).code, details: errorOf(deleted).details }).toEqual(await unknownSpaceAnswer(member));
  });
});

describe('a team write reveals nothing outside the space', () => {
  it("duplicates, auto-links and superseding stay inside the space: the owner's other memories are neither named, linked nor superseded", async () => {
    const { owner, member, spaceId } = await teamSpace();
    const text = 'The payroll password rotates every ninety days.';
    const secret = await h.store(owner, { observation: text, tags: ['private'] });
    expect(secret.status).toBe(201);
    const otherSpace = (await h.createSpace(owner, { name: 'private space' })).body.space_id;
    const inOtherSpace = await h.store(owner, { observation: text, space_id: otherSpace });
    expect(inOtherSpace.status).toBe(201);
    const hidden = [secret.body.id, inOtherSpace.body.id];

    // reject: the owner's copies elsewhere are no conflict, and their ids are not revealed.
    const rejected = await h.store(member, { observation: text, space_id: spaceId, on_conflict: 'reject' });
    expect(rejected.status, rejected.text).toBe(201);
    for (const id of hidden) expect(rejected.text).not.toContain(id);
    expect(rejected.body).toMatchObject({ conflict_detected: false, superseded: [], auto_links: [] });

    // manual: stored beside the one in the space and linked to it only (the hash embedder makes every copy a perfect match).
    const manual = await h.store(member, { observation: text, space_id: spaceId, on_conflict: 'manual' });
    expect(manual.body).toMatchObject({ conflict_detected: true, auto_links: [rejected.body.id] });

    // lww: supersedes the copies in the space, never the owner's others.
    const lww = await h.store(member, { observation: text, space_id: spaceId, on_conflict: 'lww' });
    expect(lww.body.superseded.sort()).toEqual([rejected.body.id, manual.body.id].sort());
    for (const id of hidden) {
      const mine = await call(owner, 'GET', `/v1/memories/${id}`);
      expect(mine.body.superseded_by).toBeNull();
    }

    // Inside the space the rules hold: a duplicate there is a 409 naming only the space's copy.
    const inside = await h.store(member, { observation: text, space_id: spaceId, on_conflict: 'reject' });
    expect(inside.status).toBe(409);
    expect(errorOf(inside).existing_ids).toEqual([lww.body.id]);

    // And the member still reads nothing of the owner's beyond the space.
    const shared = uuids(await call(member, 'GET', '/v1/memories?scope=shared&limit=100'));
    for (const id of hidden) expect(shared).not.toContain(id);
    expect((await call(member, 'GET', `/v1/memories/${secret.body.id}`)).status).toBe(404);
  });
});

describe('tenant isolation', () => {
  it("the grant covers that one space: not the owner's other spaces, not its store without a space, not another team's space", async () => {
    const { owner, member } = await teamSpace();
    const otherSpace = (await h.createSpace(owner, { name: 'not granted' })).body.space_id;
    const other = await h.store(member, { observation: 'Into a space not granted.', space_id: otherSpace });
    expect({ status: other.status, code: errorOf(other).code, details: errorOf(other).details }).toEqual(await unknownSpaceAnswer(member));
    expect((await h.store(member, { observation: 'Naming the owner.', space_id: otherSpace, owner_tenant_id: owner.tenantId })).status).toBe(403);
    expect((await h.store(member, { observation: 'No space at all.', owner_tenant_id: owner.tenantId })).status).toBe(403);

    // A space granting another team, whose members the writer is not among.
    const stranger = await teamSpace();
    const cross = await h.store(member, { observation: 'Into a stranger team space.', space_id: stranger.spaceId });
    expect({ status: cross.status, code: errorOf(cross).code, details: errorOf(cross).details }).toEqual(await unknownSpaceAnswer(member));

    // A memory stored without space_id stays the writer's own, however many team spaces it can write.
    const own = await h.store(member, { observation: 'My own note.' });
    expect((await call(member, 'GET', `/v1/memories/${own.body.id}`)).body.owner_tenant_id).toBe(member.tenantId);
    expect((await call(owner, 'GET', `/v1/memories/${own.body.id}`)).status).toBe(404);
    expect(await memoryCreates(owner.tenantId)).toEqual([]);
  });
});

describe('a change that lands while a store is embedding', () => {
  it('stops the store: the grant is confirmed, and held, inside the write', async () => {
    // An embeddings endpoint that holds every request whose input says HOLD until released.
    const hash = hashEmbedder();
    let arrived!: () => void;
    let release!: () => void;
    const held = { arrived: new Promise<void>((r) => (arrived = r)), released: new Promise<void>((r) => (release = r)) };
    const server = createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', async () => {
        const body = JSON.parse(raw) as { input: string[]; model: string };
        if (body.input.some((t) => t.includes('HOLD'))) {
          arrived();
          await held.released;
        }
        const data = (await hash.embed(body.input)).map((v, index) => ({ object: 'embedding', index, embedding: v.slice(0, 384) }));
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data, model: body.model }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    const e: TestEngine = await createEngine({
      env: { EMBEDDING_PROVIDER: 'openai', EMBEDDING_BASE_URL: url, EMBEDDING_MODEL: 'bge-small', EMBEDDING_DIMENSIONS: '384' },
    });
    try {
      const call = <T = never, M extends string = string, P extends string = string>(t: Tenant, method: M, path: P, body?: unknown) =>
        e.request<T, M, P>(method, path, { key: t.key, body });
      const [owner, member] = [await e.newTenant('pro'), await e.newTenant('pro')];
      const team = (await call(owner, 'POST', '/v1/teams', { name: 'Racers' })).body.team_id;
      await addMember(owner, team, member, 'member', e);
      const spaceId = (await call(owner, 'POST', '/v1/context-spaces', { name: 'race', allowed_tenant_ids: [`team:${team}`], team_write: true })).body.space_id;
      expect((await call(member, 'POST', '/v1/memories', { observation: 'Before the change.', space_id: spaceId })).status).toBe(201);

      // The store passes its checks, then waits for its embedding; meanwhile the member is demoted.
      const store = call(member, 'POST', '/v1/memories', { observation: 'HOLD: written while demoted.', space_id: spaceId });
      await held.arrived;
      expect((await call(owner, 'PUT', `/v1/teams/${team}/members/${member.tenantId}`, { role: 'readonly' })).status).toBe(200);
      release();
      const late = await store;
      expect(late.status, late.text).toBe(403);
      expect(errorOf(late).code).toBe('FORBIDDEN');
      const inSpace = (await call(owner, 'GET', `/v1/context-spaces/${spaceId}/memories`)).body.memories.map((m: { observation: string }) => m.observation);
      expect(inSpace).toEqual(['Before the change.']);
    } finally {
      release();
      await e.close();
      await new Promise((r) => server.close(r));
    }
  });
});
