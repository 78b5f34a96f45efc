import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, errorOf, type Tenant, type TestEngine } from './harness';

let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const call = <T = never, M extends string = string, P extends string = string>(t: Tenant, method: M, path: P, body?: unknown) =>
  engine.request<T, M, P>(method, path, { key: t.key, body });

/** Owner invites `who` with `role`; `who` joins with the invitation id from the mail. */
async function addMember(owner: Tenant, teamId: string, who: Tenant, role = 'member') {
  const invited = await call(owner, 'POST', `/v1/teams/${teamId}/invite`, { email: who.email, role });
  expect(invited.status, invited.text).toBe(201);
  expect(await engine.latestMailToken(who.email)).toBe(invited.body.invitation_id);
  const joined = await call(who, 'POST', '/v1/teams/join', { invitation_id: invited.body.invitation_id });
  expect(joined.status, joined.text).toBe(200);
  return invited.body.invitation_id as string;
}

async function auditOps(tenantId: string) {
  const res = await engine.sql<{ operation: string }>(
    sql`SELECT operation FROM audit_log WHERE tenant_id = ${tenantId} AND operation LIKE 'team.%' ORDER BY seq`,
  );
  return res.map((r) => r.operation);
}

describe('teams', () => {
  it('creates a team with the caller as owner, lists it, reads it with members; first_team milestone', async () => {
    const owner = await engine.newTenant('pro');
    const created = await call(owner, 'POST', '/v1/teams', { name: 'Support agents' });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({ name: 'Support agents', owner_tenant_id: owner.tenantId, member_count: 1 });
    expect(created.body.team_id).toMatch(/^team_/);
    expect(created.body.members).toEqual([{ tenant_id: owner.tenantId, role: 'owner', joined_at: engine.clock.now().toISOString() }]);
    const list = await call(owner, 'GET', '/v1/teams');
    expect(list.body).toMatchObject({ total_count: 1, has_more: false });
    expect(list.body.teams[0].team_id).toBe(created.body.team_id);
    expect((await call(owner, 'GET', `/v1/teams/${created.body.team_id}`)).body).toEqual(created.body);
    const milestones = await call(owner, 'GET', '/v1/milestones');
    expect(milestones.body.milestones.map((m: { milestone: string }) => m.milestone)).toContain('first_team');
  });

  it('invitations are bound to the verified address, single use, and valid 7 days', async () => {
    const [owner, grace, mallory] = [await engine.newTenant('pro'), await engine.newTenant('pro'), await engine.newTenant('pro')];
    const team = (await call(owner, 'POST', '/v1/teams', { name: 'Ops' })).body.team_id;
    const invited = await call(owner, 'POST', `/v1/teams/${team}/invite`, { email: grace.email.toUpperCase() });
    expect(invited.body).toMatchObject({ team_id: team, email: grace.email, role: 'member' });
    expect(Date.parse(invited.body.expires_at)).toBe(engine.clock.now().getTime() + 7 * 86_400_000);
    const stolen = await call(mallory, 'POST', '/v1/teams/join', { invitation_id: invited.body.invitation_id });
    expect(stolen.status).toBe(400);
    expect(errorOf(stolen).code).toBe('INVALID_TOKEN');
    const joined = await call(grace, 'POST', '/v1/teams/join', { invitation_id: invited.body.invitation_id });
    expect(joined.body).toMatchObject({ team_id: team, team_name: 'Ops', role: 'member' });
    const twice = await call(grace, 'POST', '/v1/teams/join', { invitation_id: invited.body.invitation_id });
    expect(errorOf(twice).code).toBe('INVALID_TOKEN');
    expect((await call(grace, 'GET', `/v1/teams/${team}`)).body.member_count).toBe(2);

    const late = await call(owner, 'POST', `/v1/teams/${team}/invite`, { email: mallory.email });
    engine.clock.advance(7 * 86_400_000 + 1);
    try {
      const expired = await call(mallory, 'POST', '/v1/teams/join', { invitation_id: late.body.invitation_id });
      expect(errorOf(expired).code).toBe('INVALID_TOKEN');
      expect(expired.body.message).toMatch(/expired/);
    } finally {
      engine.clock.advance(-(7 * 86_400_000 + 1));
    }
    expect((await call(owner, 'POST', `/v1/teams/${team}/invite`, { email: grace.email, role: 'owner' })).status).toBe(400);
    expect((await call(owner, 'POST', `/v1/teams/${team}/invite`, { email: 'not-an-address' })).status).toBe(400);
  });

  it('roles decide: admin renames and manages members, member and readonly may not, only the owner deletes', async () => {
    const [owner, admin, member, readonly, outsider] = await Promise.all(['pro', 'pro', 'pro', 'pro', 'pro'].map(() => engine.newTenant('pro')));
    const team = (await call(owner, 'POST', '/v1/teams', { name: 'Roles' })).body.team_id;
    await addMember(owner, team, admin, 'admin');
    await addMember(owner, team, member);
    await addMember(admin, team, readonly, 'readonly');

    expect((await call(admin, 'PUT', `/v1/teams/${team}`, { name: 'Renamed' })).body.name).toBe('Renamed');
    for (const who of [member, readonly]) {
      const refused = await call(who, 'PUT', `/v1/teams/${team}`, { name: 'Nope' });
      expect(refused.status).toBe(403);
      expect(errorOf(refused).code).toBe('FORBIDDEN');
      expect((await call(who, 'POST', `/v1/teams/${team}/invite`, { email: outsider.email })).status).toBe(403);
      expect((await call(who, 'GET', `/v1/teams/${team}`)).status).toBe(200);
    }
    expect((await call(outsider, 'GET', `/v1/teams/${team}`)).status).toBe(404);
    expect((await call(outsider, 'PUT', `/v1/teams/${team}`, { name: 'x' })).status).toBe(404);

    const demoted = await call(admin, 'PUT', `/v1/teams/${team}/members/${member.tenantId}`, { role: 'readonly' });
    expect(demoted.status, demoted.text).toBe(200);
    expect(demoted.body.members.find((m: { tenant_id: string }) => m.tenant_id === member.tenantId)?.role).toBe('readonly');
    expect((await call(admin, 'PUT', `/v1/teams/${team}/members/${owner.tenantId}`, { role: 'member' })).status).toBe(403);
    expect((await call(admin, 'DELETE', `/v1/teams/${team}/members/${owner.tenantId}`)).status).toBe(403);
    expect((await call(admin, 'PUT', `/v1/teams/${team}/members/${member.tenantId}`, { role: 'owner' })).status).toBe(400);

    expect((await call(admin, 'DELETE', `/v1/teams/${team}/members/${readonly.tenantId}`)).status).toBe(204);
    expect((await call(readonly, 'GET', `/v1/teams/${team}`)).status).toBe(404); // access ends at once
    expect((await call(admin, 'DELETE', `/v1/teams/${team}`)).status).toBe(403);
    expect((await call(owner, 'DELETE', `/v1/teams/${team}`)).status).toBe(204);
    expect((await call(admin, 'GET', `/v1/teams/${team}`)).status).toBe(404);

    expect(await auditOps(owner.tenantId)).toEqual([
      'team.created',
      'team.invited',
      'team.joined',
      'team.invited',
      'team.joined',
      'team.invited',
      'team.joined',
      'team.renamed',
      'team.role_changed',
      'team.member_removed',
      'team.deleted',
    ]);
    expect(await auditOps(admin.tenantId)).toEqual([]);
  });

  it("a space that lists team:<id> is readable by the team's members, and stops being so when a member is removed", async () => {
    const [owner, member, outsider] = [await engine.newTenant('pro'), await engine.newTenant('pro'), await engine.newTenant('pro')];
    const team = (await call(owner, 'POST', '/v1/teams', { name: 'Readers' })).body.team_id;
    await addMember(owner, team, member, 'readonly');
    const space = await call(owner, 'POST', '/v1/context-spaces', { name: 'handbook', allowed_tenant_ids: [`team:${team}`] });
    expect(space.status, space.text).toBe(201);
    const stored = await call(owner, 'POST', '/v1/memories', {
      observation: 'Refunds over 500 EUR need a second pair of eyes.',
      space_id: space.body.space_id,
    });
    expect(stored.status, stored.text).toBe(201);

    const viaSpace = await call(member, 'GET', `/v1/context-spaces/${space.body.space_id}/memories`);
    expect(viaSpace.status, viaSpace.text).toBe(200);
    expect(viaSpace.body.memories.map((m: { uuid: string }) => m.uuid)).toEqual([stored.body.id]);
    expect((await call(member, 'GET', `/v1/memories/${stored.body.id}`)).status).toBe(200);
    expect((await call(member, 'GET', '/v1/memories?scope=shared')).body.memories.map((m: { uuid: string }) => m.uuid)).toEqual([stored.body.id]);
    expect((await call(outsider, 'GET', `/v1/context-spaces/${space.body.space_id}/memories`)).status).toBe(403);
    expect((await call(outsider, 'GET', `/v1/memories/${stored.body.id}`)).status).toBe(404);

    expect((await call(owner, 'DELETE', `/v1/teams/${team}/members/${member.tenantId}`)).status).toBe(204);
    expect((await call(member, 'GET', `/v1/context-spaces/${space.body.space_id}/memories`)).status).toBe(403);
    expect((await call(member, 'GET', `/v1/memories/${stored.body.id}`)).status).toBe(404);
    expect((await call(member, 'GET', '/v1/memories?scope=shared')).body.memories).toEqual([]);
  });

  it('is Pro+, and validates names', async () => {
    const free = await engine.newTenant('starter');
    const refused = await call(free, 'POST', '/v1/teams', { name: 'x' });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'FEATURE_NOT_AVAILABLE', required_tier: 'pro' });
    const pro = await engine.newTenant('pro');
    expect((await call(pro, 'POST', '/v1/teams', { name: '' })).status).toBe(400);
    expect((await call(pro, 'POST', '/v1/teams', { name: 'x'.repeat(101) })).status).toBe(400);
  });
});

describe('invitations and rosters reveal no more than they must', () => {
  const UNKNOWN_INVITATION = 'inv_0000000000000000000000';

  it('an invitation sent to someone else answers exactly as an id that names nothing', async () => {
    const [owner, grace, mallory] = [await engine.newTenant('pro'), await engine.newTenant('pro'), await engine.newTenant('pro')];
    const team = (await call(owner, 'POST', '/v1/teams', { name: 'Ops' })).body.team_id;
    const invited = await call(owner, 'POST', `/v1/teams/${team}/invite`, { email: grace.email });
    const unknown = await call(mallory, 'POST', '/v1/teams/join', { invitation_id: UNKNOWN_INVITATION });
    const stolen = await call(mallory, 'POST', '/v1/teams/join', { invitation_id: invited.body.invitation_id });
    expect(unknown.status).toBe(400);
    expect(errorOf(unknown).code).toBe('INVALID_TOKEN');
    expect({ status: stolen.status, code: errorOf(stolen).code, message: errorOf(stolen).message }).toEqual({
      status: unknown.status,
      code: errorOf(unknown).code,
      message: errorOf(unknown).message,
    });
    // Spent or expired, it still says nothing to anyone else.
    expect((await call(grace, 'POST', '/v1/teams/join', { invitation_id: invited.body.invitation_id })).status).toBe(200);
    expect((await call(mallory, 'POST', '/v1/teams/join', { invitation_id: invited.body.invitation_id })).body.message).toBe(unknown.body.message);
  });

  it('an invitation stops working once its sender may no longer invite: removed or demoted', async () => {
    const [owner, admin, second, third] = await Promise.all(['pro', 'pro', 'pro', 'pro'].map(() => engine.newTenant('pro')));
    const team = (await call(owner, 'POST', '/v1/teams', { name: 'Finance' })).body.team_id;
    await addMember(owner, team, admin, 'admin');
    const toSecond = await call(admin, 'POST', `/v1/teams/${team}/invite`, { email: second.email, role: 'admin' });
    const toThird = await call(admin, 'POST', `/v1/teams/${team}/invite`, { email: third.email, role: 'member' });
    expect(toSecond.status, toSecond.text).toBe(201);

    expect((await call(owner, 'PUT', `/v1/teams/${team}/members/${admin.tenantId}`, { role: 'member' })).status).toBe(200);
    const demoted = await call(third, 'POST', '/v1/teams/join', { invitation_id: toThird.body.invitation_id });
    expect(demoted.status).toBe(400);
    expect(errorOf(demoted).code).toBe('INVALID_TOKEN');

    expect((await call(owner, 'DELETE', `/v1/teams/${team}/members/${admin.tenantId}`)).status).toBe(204);
    const removed = await call(second, 'POST', '/v1/teams/join', { invitation_id: toSecond.body.invitation_id });
    expect(removed.status).toBe(400);
    expect(errorOf(removed).code).toBe('INVALID_TOKEN');
    expect((await call(second, 'GET', `/v1/teams/${team}`)).status).toBe(404);
    expect((await call(owner, 'GET', `/v1/teams/${team}`)).body.member_count).toBe(1);
  });

  it('the owner and admins see the whole roster; a member or readonly member sees itself and the owner', async () => {
    const [owner, admin, member, readonly] = await Promise.all(['pro', 'pro', 'pro', 'pro'].map(() => engine.newTenant('pro')));
    const team = (await call(owner, 'POST', '/v1/teams', { name: 'Support' })).body.team_id;
    await addMember(owner, team, admin, 'admin');
    await addMember(owner, team, member, 'member');
    await addMember(owner, team, readonly, 'readonly');
    const ids = (res: { body: { members: { tenant_id: string }[] } }) => res.body.members.map((m) => m.tenant_id).sort();
    const everyone = [owner, admin, member, readonly].map((t) => t.tenantId).sort();
    for (const who of [owner, admin]) expect(ids(await call(who, 'GET', `/v1/teams/${team}`))).toEqual(everyone);
    for (const who of [member, readonly]) {
      const seen = await call(who, 'GET', `/v1/teams/${team}`);
      expect(ids(seen)).toEqual([owner.tenantId, who.tenantId].sort());
      expect(seen.body.member_count).toBe(4);
      const listed = await call(who, 'GET', '/v1/teams');
      expect(ids({ body: listed.body.teams[0] })).toEqual([owner.tenantId, who.tenantId].sort());
    }
  });
});
