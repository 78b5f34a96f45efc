import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conformanceChecker } from './conformance';
import { createEngine, errorOf, type Tenant, type TestEngine, type TestResponse } from './harness';
import { SseReader } from './sse';
import { PAYLOADS } from './actions-helpers';

/**
 * Supervisor interventions and the runtime's events through the API:
 * each type's effect, its record, its audit entry, and the events on the live stream (the same
 * rows webhooks are delivered from).
 */
let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine({ env: { EVENT_STREAM_POLL_MS: '60000' } });
});
afterAll(() => engine.close());

const as =
  (t: Tenant) =>
  <T = never, M extends string = string, P extends string = string>(method: M, path: P, body?: unknown) =>
    engine.request<T, M, P>(method, path, { key: t.key, body });
type Call = ReturnType<typeof as>;

/** The tenant's agent key (actions:write): the key that submits an action never decides it. */
async function agentOf(t: Tenant): Promise<Call> {
  const minted = await engine.request('POST', '/v1/keys/restricted', { key: t.key, body: { name: 'agent', scopes: ['actions:write'] } });
  expect(minted.status, minted.text).toBe(201);
  return as({ ...t, key: minted.body.api_key });
}
async function ok<T>(res: Promise<TestResponse<T>>, status: number): Promise<T> {
  const r = await res;
  expect(r.status, r.text).toBe(status);
  return r.body;
}

const streams: SseReader[] = [];
afterAll(async () => {
  await Promise.all(streams.map((s) => s.close()));
});
async function stream(t: Tenant, types: string) {
  const path = `/v1/events/stream?types=${types}`;
  const res = await engine.app.request(new Request(`http://localhost${path}`, { headers: { authorization: `Bearer ${t.key}` } }));
  conformanceChecker(engine.app)('GET', path, res.status, res.headers.get('content-type'), null);
  expect(res.status).toBe(200);
  const s = new SseReader(res.body!);
  streams.push(s);
  return s;
}
const payloads = async (s: SseReader, n: number) => (await s.events(n)).map((m) => JSON.parse(m.data!) as { type: string; data: any });

async function runningMission(call: Call, agentId = 'bot') {
  await ok(call('POST', '/v1/agents', { agent_id: agentId, name: 'Bot', provider: 'litellm', model: 'llama-3.3-70b' }), 201);
  const m = (await ok(call('POST', '/v1/missions', { agent_id: agentId, goal: 'Triage the backlog' }), 201)).mission_id as string;
  await ok(call('POST', `/v1/missions/${m}/start`), 200);
  return m;
}

describe('mission events', () => {
  it('every transition and a rollback are on the event stream, in order, with the mission and both statuses', async () => {
    const t = await engine.newTenant('pro');
    const call = as(t);
    const s = await stream(t, 'mission.started,mission.paused,mission.resumed,mission.completed,mission.failed,mission.cancelled,mission.rolled_back');
    const m = await runningMission(call);
    const cp = await ok(call('POST', `/v1/missions/${m}/checkpoints`, { label: 'a', state: { n: 1 } }), 201);
    await ok(call('POST', `/v1/missions/${m}/pause`), 200);
    await ok(call('POST', `/v1/missions/${m}/rollback`, { checkpoint_id: cp.checkpoint_id, reason: 'looping' }), 200);
    await ok(call('POST', `/v1/missions/${m}/resume`), 200);
    await ok(call('POST', `/v1/missions/${m}/complete`), 200);
    const got = await payloads(s, 5);
    expect(got.map((e) => e.type)).toEqual(['mission.started', 'mission.paused', 'mission.rolled_back', 'mission.resumed', 'mission.completed']);
    expect(got[1].data).toEqual({ mission_id: m, agent_id: 'bot', status: 'paused', previous_status: 'running' });
    expect(got[2].data).toMatchObject({
      mission_id: m,
      checkpoint_id: cp.checkpoint_id,
      reason: 'looping',
      checkpoints_discarded: 0,
      memories_reverted: 0,
      rollback_id: null,
    });
  });
});

describe('POST /v1/interventions', () => {
  it('pause pauses the running mission (409 when it is not running); the record says so; audited; on the stream', async () => {
    const t = await engine.newTenant('pro');
    const call = as(t);
    const s = await stream(t, 'intervention.recorded,mission.paused');
    const m = await runningMission(call);
    const itv = await ok(call('POST', '/v1/interventions', { intervention_type: 'pause', mission_id: m, rationale: 'Looping on a failing test' }), 201);
    expect(itv).toEqual({
      intervention_id: itv.intervention_id,
      intervention_type: 'pause',
      mission_id: m,
      action_id: null,
      agent_id: 'bot',
      rationale: 'Looping on a failing test',
      effect: { type: 'paused', mission_status: 'paused' },
      created_at: engine.clock.now().toISOString(),
    });
    expect(itv.intervention_id).toMatch(/^itv_/);
    expect((await ok(call('GET', `/v1/missions/${m}`), 200)).status).toBe('paused');
    const events = await payloads(s, 2);
    expect(events.map((e) => e.type)).toEqual(['mission.paused', 'intervention.recorded']);
    expect(events[0].data).toMatchObject({ mission_id: m, intervention_id: itv.intervention_id, reason: 'Looping on a failing test' });
    expect(events[1].data).toEqual(itv);

    const again = await call('POST', '/v1/interventions', { intervention_type: 'pause', mission_id: m });
    expect([again.status, errorOf(again).code, errorOf(again).mission_status]).toEqual([409, 'CONFLICT', 'paused']);
    // A refused intervention leaves nothing behind.
    expect((await ok(call('GET', `/v1/interventions?mission_id=${m}`), 200)).total).toBe(1);
    const audit = await ok(call('GET', '/v1/audit?limit=100'), 200);
    expect(audit.entries.filter((e) => e.operation === 'intervention.recorded').map((e) => e.metadata.intervention_id)).toEqual([itv.intervention_id]);
  });

  it('rollback_request rolls the mission back to its latest checkpoint; 409 without one; 404 for an unknown mission', async () => {
    const t = await engine.newTenant('free');
    const call = as(t);
    const m = await runningMission(call);
    const none = await call('POST', '/v1/interventions', { intervention_type: 'rollback_request', mission_id: m });
    expect([none.status, errorOf(none).code]).toEqual([409, 'CONFLICT']);
    await ok(call('POST', `/v1/missions/${m}/checkpoints`, { label: 'first', state: { n: 1 } }), 201);
    const latest = await ok(call('POST', `/v1/missions/${m}/checkpoints`, { label: 'second', state: { n: 2 } }), 201);
    engine.clock.advance(1_000);
    const itv = await ok(call('POST', '/v1/interventions', { intervention_type: 'rollback_request', mission_id: m, rationale: 'Undo the last step' }), 201);
    expect(itv.effect).toEqual({ type: 'rolled_back', checkpoint_id: latest.checkpoint_id, checkpoints_discarded: 0 });
    expect((await ok(call('GET', `/v1/missions/${m}`), 200)).state).toEqual({ n: 2 });
    const unknown = await call('POST', '/v1/interventions', { intervention_type: 'rollback_request', mission_id: 'msn_4f9Qw2b8Zr1LmT0aXcVe3K' });
    expect([unknown.status, errorOf(unknown).code]).toEqual([404, 'NOT_FOUND']);
    const missing = await call('POST', '/v1/interventions', { intervention_type: 'rollback_request' });
    expect([missing.status, errorOf(missing).code]).toEqual([400, 'VALIDATION_ERROR']);
  });

  it('escalate and reroute emit their events; annotate only records; approve decides the pending action', async () => {
    const t = await engine.newTenant('pro');
    const call = as(t);
    const s = await stream(t, 'intervention.escalated,intervention.rerouted,intervention.recorded');
    const m = await runningMission(call);
    const escalated = await ok(call('POST', '/v1/interventions', { intervention_type: 'escalate', mission_id: m, rationale: 'Needs a human' }), 201);
    expect(escalated.effect).toEqual({ type: 'escalated', event: 'intervention.escalated' });
    const rerouted = await ok(call('POST', '/v1/interventions', { intervention_type: 'reroute', agent_id: 'bot', rationale: 'Send to the DB agent' }), 201);
    expect(rerouted).toMatchObject({ mission_id: null, agent_id: 'bot', effect: { type: 'rerouted', event: 'intervention.rerouted' } });
    const note = await ok(call('POST', '/v1/interventions', { intervention_type: 'annotate', mission_id: m, rationale: 'Fine so far' }), 201);
    expect(note.effect).toBeNull();
    const held = await ok((await agentOf(t))('POST', '/v1/actions', PAYLOADS.pendingPlain), 200);
    engine.clock.advance(6_000); // solo mode decides 5 s after submission at the earliest
    const approve = await ok(call('POST', '/v1/interventions', { intervention_type: 'approve', action_id: held.action_id, rationale: 'Looks right' }), 201);
    expect(approve).toMatchObject({
      action_id: held.action_id,
      effect: { type: 'decided', action_id: held.action_id, decision: 'approve', status: 'approved' },
    });
    const noAction = await call('POST', '/v1/interventions', { intervention_type: 'reject' });
    expect([noAction.status, errorOf(noAction).code]).toEqual([400, 'VALIDATION_ERROR']);
    expect((await ok(call('GET', `/v1/missions/${m}`), 200)).status).toBe('running');

    const events = await payloads(s, 6);
    expect(events.map((e) => e.type)).toEqual([
      'intervention.escalated',
      'intervention.recorded',
      'intervention.rerouted',
      'intervention.recorded',
      'intervention.recorded',
      'intervention.recorded',
    ]);
    expect(events[0].data).toMatchObject({ intervention_id: escalated.intervention_id, mission_id: m, agent_id: 'bot', rationale: 'Needs a human' });
    expect(events.filter((e) => e.type === 'intervention.recorded').map((e) => e.data.intervention_id)).toEqual(
      [escalated, rerouted, note, approve].map((i) => i.intervention_id),
    );
  });

  it('approve and reject decide through the approval rules: timing, confirmation, immutability; a refused decision records nothing', async () => {
    const t = await engine.newTenant('pro');
    const other = await engine.newTenant('pro');
    const call = as(t);
    const agent = await agentOf(t);
    const held = await ok(agent('POST', '/v1/actions', PAYLOADS.pendingPlain), 200);
    const early = await call('POST', '/v1/interventions', { intervention_type: 'reject', action_id: held.action_id });
    expect([early.status, errorOf(early).code, errorOf(early).retry_after]).toEqual([409, 'CONFLICT', 5]);
    engine.clock.advance(6_000);
    const foreign = await as(other)('POST', '/v1/interventions', { intervention_type: 'reject', action_id: held.action_id });
    expect([foreign.status, errorOf(foreign).code]).toEqual([404, 'svc_ram.v1.control.approval_not_found']);
    const rejected = await ok(call('POST', '/v1/interventions', { intervention_type: 'reject', action_id: held.action_id, rationale: 'Not this week' }), 201);
    expect(rejected.effect).toEqual({ type: 'decided', action_id: held.action_id, decision: 'deny', status: 'denied' });
    expect(await ok(call('GET', `/v1/actions/${held.action_id}`), 200)).toMatchObject({ status: 'denied', reason: 'Not this week' });
    const again = await call('POST', '/v1/interventions', { intervention_type: 'approve', action_id: held.action_id });
    expect([again.status, errorOf(again).code]).toEqual([409, 'svc_ram.v1.control.approval_already_decided']);

    const wire = await ok(agent('POST', '/v1/actions', PAYLOADS.pending), 200);
    engine.clock.advance(6_000);
    const unconfirmed = await call('POST', '/v1/interventions', { intervention_type: 'approve', action_id: wire.action_id });
    expect([unconfirmed.status, errorOf(unconfirmed).code]).toEqual([400, 'VALIDATION_ERROR']);
    const confirmed = await ok(call('POST', '/v1/interventions', { intervention_type: 'approve', action_id: wire.action_id, confirmation: 'ROLLBACK' }), 201);
    expect(confirmed.effect?.status).toBe('approved');
    const listed = await ok(call('GET', '/v1/interventions?limit=10'), 200);
    expect(listed.interventions.map((i: { intervention_id: string }) => i.intervention_id).sort()).toEqual(
      [rejected.intervention_id, confirmed.intervention_id].sort(),
    );
  });

  it("refuses an unknown type, an unknown agent, an agent other than the mission's; lists with filters and a capped limit", async () => {
    const t = await engine.newTenant('free');
    const call = as(t);
    const m = await runningMission(call);
    await ok(call('POST', '/v1/agents', { agent_id: 'other', name: 'Other', provider: 'openai', model: 'gpt-4.1' }), 201);
    const badType = await call('POST', '/v1/interventions', { intervention_type: 'nudge', mission_id: m });
    expect([badType.status, errorOf(badType).code]).toEqual([400, 'VALIDATION_ERROR']);
    expect((await call('POST', '/v1/interventions', { intervention_type: 'annotate', agent_id: 'ghost' })).status).toBe(404);
    const mismatch = await call('POST', '/v1/interventions', { intervention_type: 'annotate', mission_id: m, agent_id: 'other' });
    expect([mismatch.status, errorOf(mismatch).code]).toEqual([400, 'VALIDATION_ERROR']);

    await ok(call('POST', '/v1/interventions', { intervention_type: 'annotate', mission_id: m }), 201);
    await ok(call('POST', '/v1/interventions', { intervention_type: 'escalate', agent_id: 'other' }), 201);
    await ok(call('POST', '/v1/interventions', { intervention_type: 'annotate', agent_id: 'other' }), 201);
    const all = await ok(call('GET', '/v1/interventions'), 200);
    expect(all).toMatchObject({ total: 3, limit: 100, offset: 0, has_more: false });
    expect((await ok(call('GET', '/v1/interventions?agent_id=other'), 200)).total).toBe(2);
    expect((await ok(call('GET', '/v1/interventions?agent_id=other&intervention_type=annotate'), 200)).total).toBe(1);
    expect((await ok(call('GET', `/v1/interventions?mission_id=${m}`), 200)).interventions.map((i) => i.intervention_type)).toEqual(['annotate']);
    expect((await ok(call('GET', '/v1/interventions?limit=1'), 200)).has_more).toBe(true);
    expect((await call('GET', '/v1/interventions?limit=1001')).status).toBe(400);
    expect((await call('GET', '/v1/interventions?intervention_type=nudge')).status).toBe(400);
  });
});
