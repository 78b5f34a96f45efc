import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BodyOf } from './client';
import { createEngine, errorOf, type Tenant, type TestEngine, type TestResponse } from './harness';

/**
 * The agent runtime through the API (docs/architecture.md#agent-runtime):
 * agents, capability packs, missions and their lifecycle, checkpoints, mission rollback (with the
 * agent's memory writes reverted), and the helper the actions family uses. Interventions and the
 * event stream: test/runtime-interventions.test.ts.
 */
let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const SECOND = 1_000;
const as =
  (t: Tenant) =>
  <T = never, M extends string = string, P extends string = string>(method: M, path: P, body?: unknown) =>
    engine.request<T, M, P>(method, path, { key: t.key, body });
type Call = ReturnType<typeof as>;
/** The transition routes (`/v1/missions/{id}/start` ...) are built per verb, so the route table does not see them. */
type Mission = BodyOf<'GET', '/v1/missions/msn_x'>;

async function ok<T>(res: Promise<TestResponse<T>>, status: number): Promise<T> {
  const r = await res;
  expect(r.status, r.text).toBe(status);
  return r.body;
}

const agentBody = (extra: Record<string, unknown> = {}) => ({ name: 'Release bot', provider: 'openai', model: 'gpt-4.1', ...extra });

async function missionOf(call: Call, agentId: string, extra: Record<string, unknown> = {}) {
  return ok(call('POST', '/v1/missions', { agent_id: agentId, goal: 'Ship release 1.4', ...extra }), 201);
}

describe('capability packs', () => {
  it('create and list; a risk level for an unknown tool, an unknown level, a duplicate name are refused', async () => {
    const call = as(await engine.newTenant('free'));
    const pack = await ok(
      call('POST', '/v1/capabilities', {
        name: 'github-ops',
        description: 'Triage issues',
        tools: [
          { name: 'github.create_issue', description: 'Open an issue' },
          { name: 'slack', description: 'Any Slack action' },
        ],
        risk_levels: { 'github.create_issue': 'medium', slack: 'high' },
      }),
      201,
    );
    expect(pack).toMatchObject({
      name: 'github-ops',
      description: 'Triage issues',
      risk_levels: { 'github.create_issue': 'medium', slack: 'high' },
      created_at: engine.clock.now().toISOString(),
    });
    expect(pack.capability_id).toMatch(/^cap_/);
    expect(pack.tools).toEqual([
      { name: 'github.create_issue', description: 'Open an issue' },
      { name: 'slack', description: 'Any Slack action' },
    ]);

    const unknownTool = await call('POST', '/v1/capabilities', { name: 'p2', tools: [{ name: 'a', description: 'A' }], risk_levels: { b: 'low' } });
    expect(unknownTool.status).toBe(400);
    expect(errorOf(unknownTool).code).toBe('VALIDATION_ERROR');
    expect(unknownTool.text).toContain('risk_levels');
    const badLevel = await call('POST', '/v1/capabilities', { name: 'p3', tools: [{ name: 'a', description: 'A' }], risk_levels: { a: 'extreme' } });
    expect([badLevel.status, errorOf(badLevel).code]).toEqual([400, 'VALIDATION_ERROR']);
    const noDescription = await call('POST', '/v1/capabilities', { name: 'p4', tools: [{ name: 'a' }] });
    expect(noDescription.status).toBe(400);
    const twice = await call('POST', '/v1/capabilities', {
      name: 'p5',
      tools: [
        { name: 'a', description: 'A' },
        { name: 'a', description: 'B' },
      ],
    });
    expect(twice.status).toBe(400);
    const duplicate = await call('POST', '/v1/capabilities', { name: 'github-ops' });
    expect([duplicate.status, errorOf(duplicate).code]).toEqual([409, 'CONFLICT']);

    const list = await ok(call('GET', '/v1/capabilities'), 200);
    expect(list).toMatchObject({ total: 1, limit: 100, offset: 0, has_more: false });
    expect(list.capabilities).toEqual([pack]);
  });
});

describe('agents', () => {
  it('create (agent_id given or generated), get with active missions, list by status, PATCH status', async () => {
    const call = as(await engine.newTenant('free'));
    await ok(call('POST', '/v1/capabilities', { name: 'github-ops', tools: [{ name: 'github', description: 'GitHub' }] }), 201);
    const agent = await ok(
      call('POST', '/v1/agents', agentBody({ agent_id: 'release-bot', capabilities: ['github-ops'], instructions: 'Never push to main.' })),
      201,
    );
    const now = engine.clock.now().toISOString();
    expect(agent).toEqual({
      agent_id: 'release-bot',
      name: 'Release bot',
      description: null,
      provider: 'openai',
      model: 'gpt-4.1',
      instructions: 'Never push to main.',
      capabilities: ['github-ops'],
      status: 'active',
      active_missions: [],
      created_at: now,
      updated_at: now,
    });
    const generated = await ok(call('POST', '/v1/agents', agentBody({ provider: 'anthropic', model: 'claude-sonnet-4' })), 201);
    expect(generated.agent_id).toMatch(/^agt_[0-9A-Za-z]{22}$/);

    const mission = await missionOf(call, 'release-bot');
    const got = await ok(call('GET', '/v1/agents/release-bot'), 200);
    expect(got.active_missions).toEqual([{ mission_id: mission.mission_id, goal: 'Ship release 1.4', status: 'queued' }]);

    engine.clock.advance(SECOND);
    const paused = await ok(call('PATCH', `/v1/agents/${generated.agent_id}`, { status: 'paused' }), 200);
    expect(paused).toMatchObject({ status: 'paused', updated_at: engine.clock.now().toISOString() });
    const list = await ok(call('GET', '/v1/agents?status=paused'), 200);
    expect(list.agents.map((a) => a.agent_id)).toEqual([generated.agent_id]);
    expect(list.total).toBe(1);
    const all = await ok(call('GET', '/v1/agents?limit=1'), 200);
    expect(all).toMatchObject({ total: 2, has_more: true, limit: 1 });
    expect((await call('PATCH', '/v1/agents/release-bot', { status: 'sleeping' })).status).toBe(400);
    expect((await call('GET', '/v1/agents/nobody')).status).toBe(404);
  });

  it('refuses an agent without provider or model, an unknown provider, a duplicate agent_id, an unknown capability pack', async () => {
    const call = as(await engine.newTenant('free'));
    for (const body of [
      { name: 'a', model: 'gpt-4.1' },
      { name: 'a', provider: 'openai' },
      { name: 'a', provider: 'mistral', model: 'large' },
      { provider: 'openai', model: 'x' },
    ]) {
      const res = await call('POST', '/v1/agents', body);
      expect([res.status, errorOf(res).code], JSON.stringify(body)).toEqual([400, 'VALIDATION_ERROR']);
    }
    await ok(call('POST', '/v1/agents', agentBody({ agent_id: 'dup' })), 201);
    const dup = await call('POST', '/v1/agents', agentBody({ agent_id: 'dup' }));
    expect([dup.status, errorOf(dup).code]).toEqual([409, 'CONFLICT']);
    const unknownPack = await call('POST', '/v1/agents', agentBody({ capabilities: ['nope'] }));
    expect([unknownPack.status, errorOf(unknownPack).code]).toEqual([404, 'NOT_FOUND']);
    expect(errorOf(unknownPack).error).toContain('nope');
    const badId = await call('POST', '/v1/agents', agentBody({ agent_id: 'has space' }));
    expect(badId.status).toBe(400);
  });

  it('delete cancels the active missions in the same transaction; finished ones stay as they are', async () => {
    const call = as(await engine.newTenant('free'));
    await ok(call('POST', '/v1/agents', agentBody({ agent_id: 'doomed' })), 201);
    const queued = await missionOf(call, 'doomed');
    const running = await missionOf(call, 'doomed');
    const done = await missionOf(call, 'doomed');
    await ok(call('POST', `/v1/missions/${running.mission_id}/start`), 200);
    await ok(call('POST', `/v1/missions/${done.mission_id}/start`), 200);
    await ok(call('POST', `/v1/missions/${done.mission_id}/complete`), 200);
    engine.clock.advance(SECOND);
    const deleted = await ok(call('DELETE', '/v1/agents/doomed'), 200);
    expect(deleted).toMatchObject({ deleted: true, agent_id: 'doomed' });
    expect([...deleted.missions_cancelled].sort()).toEqual([queued.mission_id, running.mission_id].sort());
    for (const m of [queued, running]) {
      expect(await ok(call('GET', `/v1/missions/${m.mission_id}`), 200)).toMatchObject({ status: 'cancelled', ended_at: engine.clock.now().toISOString() });
    }
    expect((await ok(call('GET', `/v1/missions/${done.mission_id}`), 200)).status).toBe('completed');
    expect((await call('GET', '/v1/agents/doomed')).status).toBe(404);
    expect((await call('DELETE', '/v1/agents/doomed')).status).toBe(404);
    const resume = await call('POST', `/v1/missions/${running.mission_id}/resume`);
    expect([resume.status, errorOf(resume).code, errorOf(resume).mission_status]).toEqual([409, 'CONFLICT', 'cancelled']);
    const audit = await ok(call('GET', '/v1/audit?limit=100'), 200);
    expect(JSON.stringify(audit)).toContain('agent.deleted');
  });

  it("another tenant's agents, missions and checkpoints answer as ones that do not exist", async () => {
    const owner = as(await engine.newTenant('pro'));
    const other = as(await engine.newTenant('pro'));
    await ok(owner('POST', '/v1/agents', agentBody({ agent_id: 'shared-name' })), 201);
    const mission = await missionOf(owner, 'shared-name');
    const checkpoint = await ok(owner('POST', `/v1/missions/${mission.mission_id}/checkpoints`, { label: 'one' }), 201);
    expect((await other('GET', '/v1/agents/shared-name')).status).toBe(404);
    expect((await other('POST', '/v1/missions', { agent_id: 'shared-name', goal: 'x' })).status).toBe(404);
    expect((await other('GET', `/v1/missions/${mission.mission_id}`)).status).toBe(404);
    expect((await other('POST', `/v1/missions/${mission.mission_id}/start`)).status).toBe(404);
    expect((await other('GET', `/v1/missions/${mission.mission_id}/checkpoints`)).status).toBe(404);
    expect((await other('POST', '/v1/interventions', { intervention_type: 'annotate', mission_id: mission.mission_id })).status).toBe(404);
    expect((await ok(other('GET', '/v1/missions'), 200)).total).toBe(0);
    // The same agent_id is free in another tenant.
    await ok(other('POST', '/v1/agents', agentBody({ agent_id: 'shared-name' })), 201);
    const theirs = await missionOf(other, 'shared-name');
    const foreign = await other('POST', `/v1/missions/${theirs.mission_id}/rollback`, { checkpoint_id: checkpoint.checkpoint_id });
    expect([foreign.status, errorOf(foreign).code]).toEqual([404, 'NOT_FOUND']);
  });
});

describe('missions', () => {
  it('create (queued), the lifecycle returning the full record, 409 naming the current status on an illegal transition', async () => {
    const call = as(await engine.newTenant('free'));
    await ok(call('POST', '/v1/capabilities', { name: 'github-ops' }), 201);
    await ok(call('POST', '/v1/capabilities', { name: 'slack-ops' }), 201);
    await ok(call('POST', '/v1/agents', agentBody({ agent_id: 'bot', capabilities: ['github-ops', 'slack-ops'] })), 201);
    const created = await missionOf(call, 'bot', { constraints: ['No force pushes'], success_criteria: ['Tag exists'], allowed_capabilities: ['github-ops'] });
    const t0 = engine.clock.now().toISOString();
    expect(created).toEqual({
      mission_id: created.mission_id,
      agent_id: 'bot',
      goal: 'Ship release 1.4',
      constraints: ['No force pushes'],
      success_criteria: ['Tag exists'],
      allowed_capabilities: ['github-ops'],
      status: 'queued',
      state: {},
      created_at: t0,
      updated_at: t0,
      started_at: null,
      ended_at: null,
    });
    expect(created.mission_id).toMatch(/^msn_/);
    expect((await missionOf(call, 'bot')).allowed_capabilities).toEqual(['github-ops', 'slack-ops']);
    const id = created.mission_id;
    const step = async (verb: string, status: string) => {
      engine.clock.advance(SECOND);
      const m = await ok(call<Mission>('POST', `/v1/missions/${id}/${verb}`), 200);
      expect(m).toMatchObject({ mission_id: id, status, updated_at: engine.clock.now().toISOString() });
      return m;
    };
    const illegal = async (verb: string, current: string) => {
      const res = await call('POST', `/v1/missions/${id}/${verb}`);
      expect([res.status, errorOf(res).code, errorOf(res).mission_status], `${verb} from ${current}`).toEqual([409, 'CONFLICT', current]);
      expect(errorOf(res).error).toContain(current);
    };
    await illegal('pause', 'queued');
    await illegal('resume', 'queued');
    const started = await step('start', 'running');
    expect(started.started_at).toBe(engine.clock.now().toISOString());
    await illegal('start', 'running');
    await step('pause', 'paused');
    await illegal('pause', 'paused');
    const resumed = await step('resume', 'running');
    expect(resumed.started_at).toBe(started.started_at);
    const completed = await step('complete', 'completed');
    expect(completed.ended_at).toBe(engine.clock.now().toISOString());
    for (const verb of ['start', 'pause', 'resume', 'complete', 'fail', 'cancel']) await illegal(verb, 'completed');

    const other = (await missionOf(call, 'bot')).mission_id;
    expect((await ok(call<Mission>('POST', `/v1/missions/${other}/fail`), 200)).status).toBe('failed');
    const cancelMe = (await missionOf(call, 'bot')).mission_id;
    expect((await ok(call<Mission>('POST', `/v1/missions/${cancelMe}/cancel`), 200)).status).toBe('cancelled');
    const afterCancel = await call('POST', `/v1/missions/${cancelMe}/resume`);
    expect([afterCancel.status, errorOf(afterCancel).mission_status]).toEqual([409, 'cancelled']);

    const list = await ok(call('GET', '/v1/missions?agent_id=bot&status=failed'), 200);
    expect(list.missions.map((m) => m.mission_id)).toEqual([other]);
    expect((await ok(call('GET', '/v1/missions?agent_id=nobody'), 200)).total).toBe(0);
    expect((await call('GET', '/v1/missions/msn_4f9Qw2b8Zr1LmT0aXcVe3K')).status).toBe(404);
    expect((await call('GET', '/v1/missions/not-an-id')).status).toBe(404);
  });

  it("refuses a mission without a goal, for an unknown agent (404), an archived agent (409), capabilities outside the agent's (400)", async () => {
    const call = as(await engine.newTenant('free'));
    await ok(call('POST', '/v1/capabilities', { name: 'github-ops' }), 201);
    await ok(call('POST', '/v1/capabilities', { name: 'prod-db' }), 201);
    await ok(call('POST', '/v1/agents', agentBody({ agent_id: 'bot', capabilities: ['github-ops'] })), 201);
    const noGoal = await call('POST', '/v1/missions', { agent_id: 'bot' });
    expect([noGoal.status, errorOf(noGoal).code]).toEqual([400, 'VALIDATION_ERROR']);
    const blank = await call('POST', '/v1/missions', { agent_id: 'bot', goal: '   ' });
    expect(blank.status).toBe(400);
    const unknown = await call('POST', '/v1/missions', { agent_id: 'ghost', goal: 'x' });
    expect([unknown.status, errorOf(unknown).code]).toEqual([404, 'NOT_FOUND']);
    const outside = await call('POST', '/v1/missions', { agent_id: 'bot', goal: 'x', allowed_capabilities: ['github-ops', 'prod-db'] });
    expect([outside.status, errorOf(outside).code]).toEqual([400, 'VALIDATION_ERROR']);
    expect(errorOf(outside).error).toContain('prod-db');

    const running = await missionOf(call, 'bot');
    await ok(call('POST', `/v1/missions/${running.mission_id}/start`), 200);
    await ok(call('PATCH', '/v1/agents/bot', { status: 'paused' }), 200);
    const resumePaused = await call('POST', `/v1/missions/${(await missionOf(call, 'bot')).mission_id}/start`);
    expect([resumePaused.status, errorOf(resumePaused).agent_status]).toEqual([409, 'paused']);
    const archived = await ok(call('PATCH', '/v1/agents/bot', { status: 'archived' }), 200);
    expect(archived.active_missions).toEqual([]);
    expect((await ok(call('GET', `/v1/missions/${running.mission_id}`), 200)).status).toBe('cancelled');
    const toArchived = await call('POST', '/v1/missions', { agent_id: 'bot', goal: 'x' });
    expect([toArchived.status, errorOf(toArchived).code, errorOf(toArchived).agent_status]).toEqual([409, 'CONFLICT', 'archived']);
  });
});

describe('checkpoints and mission rollback', () => {
  it('checkpoints list in creation order; rollback restores the state, discards later checkpoints, records why', async () => {
    const call = as(await engine.newTenant('free'));
    await ok(call('POST', '/v1/agents', agentBody({ agent_id: 'bot' })), 201);
    const m = (await missionOf(call, 'bot')).mission_id;
    await ok(call('POST', `/v1/missions/${m}/start`), 200);
    const labels = ['one', 'two', 'three', 'four'];
    const made = [];
    for (const [i, label] of labels.entries()) made.push(await ok(call('POST', `/v1/missions/${m}/checkpoints`, { label, state: { step: i + 1 } }), 201));
    expect(made[0]).toEqual({
      checkpoint_id: made[0].checkpoint_id,
      mission_id: m,
      label: 'one',
      state: { step: 1 },
      created_at: engine.clock.now().toISOString(),
    });
    expect(made[0].checkpoint_id).toMatch(/^chk_/);
    const list = await ok(call('GET', `/v1/missions/${m}/checkpoints`), 200);
    expect(list.checkpoints.map((c) => c.label)).toEqual(labels);
    expect(list.total).toBe(4);
    expect((await ok(call('GET', `/v1/missions/${m}/checkpoints?limit=2&offset=1`), 200)).checkpoints.map((c) => c.label)).toEqual(['two', 'three']);

    const noState = await ok(call('POST', `/v1/missions/${m}/checkpoints`, { label: 'bare' }), 201);
    expect(noState.state).toEqual({});
    const tooBig = await call('POST', `/v1/missions/${m}/checkpoints`, { label: 'big', state: { blob: 'x'.repeat(20_000) } });
    expect(tooBig.status).toBe(400);
    const mismatch = await call('POST', `/v1/missions/${m}/checkpoints`, { label: 'x', mission_id: 'msn_4f9Qw2b8Zr1LmT0aXcVe3K' });
    expect(mismatch.status).toBe(400);

    engine.clock.advance(SECOND);
    const rolled = await ok(call('POST', `/v1/missions/${m}/rollback`, { checkpoint_id: made[1].checkpoint_id, reason: 'step 3 went wrong' }), 200);
    expect(rolled).toMatchObject({
      checkpoint_id: made[1].checkpoint_id,
      reason: 'step 3 went wrong',
      checkpoints_discarded: 3,
      memories_reverted: 0,
      memory_rollback: null,
      mission: { mission_id: m, status: 'running', state: { step: 2 }, updated_at: engine.clock.now().toISOString() },
    });
    expect((await ok(call('GET', `/v1/missions/${m}`), 200)).state).toEqual({ step: 2 });
    expect((await ok(call('GET', `/v1/missions/${m}/checkpoints`), 200)).checkpoints.map((c) => c.label)).toEqual(['one', 'two']);
    // A discarded checkpoint, another mission's, an unknown one: 404.
    const gone = await call('POST', `/v1/missions/${m}/rollback`, { checkpoint_id: made[3].checkpoint_id });
    expect([gone.status, errorOf(gone).code]).toEqual([404, 'NOT_FOUND']);
    const other = (await missionOf(call, 'bot')).mission_id;
    const ofOther = await ok(call('POST', `/v1/missions/${other}/checkpoints`, { label: 'theirs' }), 201);
    expect((await call('POST', `/v1/missions/${m}/rollback`, { checkpoint_id: ofOther.checkpoint_id })).status).toBe(404);
    expect((await call('POST', `/v1/missions/${m}/rollback`, { checkpoint_id: 'chk_4f9Qw2b8Zr1LmT0aXcVe3K' })).status).toBe(404);
    expect((await call('POST', `/v1/missions/${m}/rollback`, {})).status).toBe(400);

    const audit = await ok(call('GET', '/v1/audit?limit=200'), 200);
    const entry = audit.entries.find((e) => e.operation === 'mission.rolled_back');
    expect(entry!.metadata).toMatchObject({ mission_id: m, checkpoint_id: made[1].checkpoint_id, reason: 'step 3 went wrong', checkpoints_discarded: 3 });

    await ok(call('POST', `/v1/missions/${m}/complete`), 200);
    const late = await call('POST', `/v1/missions/${m}/checkpoints`, { label: 'late' });
    expect([late.status, errorOf(late).mission_status]).toEqual([409, 'completed']);
  });

  it("revert_memories undoes exactly the agent's memory writes after the checkpoint (create, update, delete), not other agents'", async () => {
    const tenant = await engine.newTenant('free');
    const call = as(tenant);
    const get = async (id: string) => call('GET', `/v1/memories/${id}`);
    const remember = async (observation: string, agent_id: string) => (await ok(call('POST', '/v1/memories', { observation, agent_id }), 201)).id as string;
    await ok(call('POST', '/v1/agents', agentBody({ agent_id: 'writer' })), 201);
    const edited = await remember('The deploy window is Tuesday.', 'writer');
    const removed = await remember('The staging database is db-2.', 'writer');
    const othersEdited = await remember('The on-call engineer is Ana.', 'someone-else');
    const before = await remember('Releases are tagged vX.Y.', 'writer');

    const m = (await missionOf(call, 'writer')).mission_id;
    await ok(call('POST', `/v1/missions/${m}/start`), 200);
    engine.clock.advance(SECOND);
    const checkpoint = await ok(call('POST', `/v1/missions/${m}/checkpoints`, { label: 'before the mistake', state: { step: 1 } }), 201);
    engine.clock.advance(SECOND);

    const created = await remember('The deploy window moved to Friday.', 'writer');
    await ok(call('PATCH', `/v1/memories/${edited}`, { observation: 'The deploy window is Friday.' }), 200);
    await ok(call('DELETE', `/v1/memories/${removed}`), 200);
    const othersCreated = await remember('Ana swapped with Bo.', 'someone-else');
    await ok(call('PATCH', `/v1/memories/${othersEdited}`, { observation: 'The on-call engineer is Bo.' }), 200);
    await ok(call('POST', `/v1/missions/${m}/checkpoints`, { label: 'after the mistake', state: { step: 2 } }), 201);

    engine.clock.advance(SECOND);
    const preview = await ok(call('GET', `/v1/missions/${m}/rollback/preview?checkpoint_id=${checkpoint.checkpoint_id}`), 200);
    expect(preview).toMatchObject({
      mission_id: m,
      target_timestamp: checkpoint.created_at,
      state: { step: 1 },
      checkpoints_discarded: 1,
      memories: { removed: 1, restored: 1, reverted: 1 },
      memories_reverted: 3,
    });
    expect((await get(created)).status).toBe(200);
    const latest = await ok(call('GET', `/v1/missions/${m}/rollback/preview`), 200);
    expect(latest).toMatchObject({ checkpoints_discarded: 0, state: { step: 2 }, memories_reverted: 0 });
    const fresh = (await missionOf(call, 'writer')).mission_id;
    const none = await call('GET', `/v1/missions/${fresh}/rollback/preview`);
    expect([none.status, errorOf(none).code]).toEqual([409, 'CONFLICT']);
    const rolled = await ok(
      call('POST', `/v1/missions/${m}/rollback`, { checkpoint_id: checkpoint.checkpoint_id, reason: 'wrong deploy day', revert_memories: true }),
      200,
    );
    expect(rolled).toMatchObject({ checkpoints_discarded: 1, memories_reverted: 3, mission: { state: { step: 1 } } });
    expect(rolled.memory_rollback).toMatchObject({ removed: 1, restored: 1, reverted: 1 });
    expect(rolled.memory_rollback?.rollback_id).toMatch(/^rb_/);

    expect((await get(created)).status).toBe(404);
    expect((await get(edited)).body.observation).toBe('The deploy window is Tuesday.');
    expect((await get(removed)).body.observation).toBe('The staging database is db-2.');
    expect((await get(before)).body.observation).toBe('Releases are tagged vX.Y.');
    // Another agent's writes after the checkpoint stay.
    expect((await get(othersCreated)).body.observation).toBe('Ana swapped with Bo.');
    expect((await get(othersEdited)).body.observation).toBe('The on-call engineer is Bo.');

    // As a rollback: history row, audit entry, counted.
    const history = await ok(call('GET', '/v1/rollback/history'), 200);
    expect(history.rollbacks[0]).toMatchObject({
      rollback_id: rolled.memory_rollback?.rollback_id,
      target: checkpoint.created_at,
      operations_undone: 1,
      artifacts_restored: 1,
      memories_reverted: 1,
    });
    const audit = await ok(call('GET', '/v1/audit?limit=200'), 200);
    const rollbackEntry = audit.entries.find((e) => e.operation === 'rollback');
    expect(rollbackEntry!.metadata).toMatchObject({
      scope: 'agent',
      agent_id: 'writer',
      mission_id: m,
      reason: 'wrong deploy day',
      removed: 1,
      restored: 1,
      reverted: 1,
    });
    expect((await ok(call('GET', '/v1/usage'), 200)).rollbacks.used).toBe(1);

    // Nothing left to undo: a second revert changes nothing.
    const again = await ok(call('POST', `/v1/missions/${m}/rollback`, { checkpoint_id: checkpoint.checkpoint_id, revert_memories: true }), 200);
    expect(again.memories_reverted).toBe(0);
  });
});

describe('the capability helper for actions (shared/runtime)', () => {
  it("runtimeAgentTools: null for an unregistered agent id, else its packs' tools with risk levels; toolFor matches action or connector", async () => {
    const { runtimeAgentTools, toolFor } = await import('../shared/runtime/tools');
    const tenant = await engine.newTenant('free');
    const call = as(tenant);
    await ok(
      call('POST', '/v1/capabilities', {
        name: 'gh',
        tools: [
          { name: 'github', description: 'All of GitHub' },
          { name: 'linear.create_issue', description: 'File in Linear' },
        ],
        risk_levels: { github: 'high' },
      }),
      201,
    );
    await ok(call('POST', '/v1/agents', agentBody({ agent_id: 'bot', capabilities: ['gh'] })), 201);
    const db = engine.node.services.db;
    expect(await runtimeAgentTools(db, tenant.tenantId, 'not-registered')).toBeNull();
    const found = await runtimeAgentTools(db, tenant.tenantId, 'bot');
    expect(found).toEqual({
      agentId: 'bot',
      status: 'active',
      tools: [
        { name: 'github', description: 'All of GitHub', riskLevel: 'high', capability: 'gh' },
        { name: 'linear.create_issue', description: 'File in Linear', riskLevel: null, capability: 'gh' },
      ],
    });
    expect(toolFor(found!.tools, 'github.create_issue')?.name).toBe('github');
    expect(toolFor(found!.tools, 'linear.create_issue')?.name).toBe('linear.create_issue');
    expect(toolFor(found!.tools, 'linear.delete_issue')).toBeNull();
    expect(toolFor(found!.tools, 'slack.post', 'slack')).toBeNull();
    const other = await engine.newTenant('free');
    expect(await runtimeAgentTools(db, other.tenantId, 'bot')).toBeNull();
  });
});
