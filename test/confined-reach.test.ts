import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PAYLOADS } from './actions-helpers';
import { createEngine, errorOf, type Tenant, type TestEngine, type TestResponse } from './harness';

/**
 * A key confined to an agent (or to spaces) cannot widen its own reach: it does not reach another
 * agent's actions and traces by id (404, exactly as an id that names nothing), and it cannot set who
 * else reaches a space (which would let another account read what the key itself cannot).
 */
let engine: TestEngine;
let owner: Tenant;
let other: Tenant;
let botA: string;

beforeAll(async () => {
  engine = await createEngine();
  [owner, other] = [await engine.newTenant('pro'), await engine.newTenant('pro')];
  botA = await mint({ name: 'bot-a', scopes: ['*'], agent_id: 'bot-a' });
});
afterAll(() => engine.close());

async function mint(body: Record<string, unknown>): Promise<string> {
  const res = await engine.request('POST', '/v1/keys/restricted', { key: owner.key, body });
  expect(res.status, res.text).toBe(201);
  return res.body.api_key;
}

const as = (key: string, method: string, path: string, body?: unknown) => engine.request<any>(method, path, { key, body });

/** The foreign answer is the unknown id's: 404 with the same code. */
function sameAsUnknown(foreign: TestResponse, unknown: TestResponse, what: string) {
  expect(foreign.status, `${what}: ${foreign.text}`).toBe(404);
  expect({ status: foreign.status, code: errorOf(foreign).code }, what).toEqual({ status: unknown.status, code: errorOf(unknown).code });
}

describe("a key confined to an agent and another agent's records", () => {
  it("answers another agent's action by id as an unknown one: get and result", async () => {
    const allowed = await as(owner.key, 'POST', '/v1/actions', { ...PAYLOADS.allowed, agent_id: 'bot-b' });
    expect(allowed.body.status, allowed.text).toBe('allowed');
    const id = allowed.body.action_id as string;
    const unknown = 'act_0000000000000000000000';
    for (const [method, suffix, body] of [
      ['GET', '', undefined],
      ['POST', '/result', { status: 'executed', detail: 'done by bot-a' }],
    ] as const) {
      sameAsUnknown(
        await as(botA, method, `/v1/actions/${id}${suffix}`, body),
        await as(botA, method, `/v1/actions/${unknown}${suffix}`, body),
        `${method} ${suffix}`,
      );
    }
    expect((await as(owner.key, 'GET', `/v1/actions/${id}`)).body.status).toBe('allowed');
    // Its own agent's action it still reads.
    const own = await as(botA, 'POST', '/v1/actions', PAYLOADS.allowed);
    expect((await as(botA, 'GET', `/v1/actions/${own.body.action_id}`)).status).toBe(200);
  });

  it("answers another agent's trace by id as an unknown one: get, steps, complete, verify, certificate", async () => {
    const start = async () => {
      const res = await as(owner.key, 'POST', '/v1/traces', { agent_id: 'bot-b', description: 'bot-b reasons' });
      expect(res.status, res.text).toBe(201);
      return res.body.trace_id as string;
    };
    const [active, sealed] = [await start(), await start()];
    expect((await as(owner.key, 'POST', `/v1/traces/${sealed}/complete`)).status).toBe(200);
    const unknown = 'trc_0000000000000000000000';
    const step = { type: 'ACTION', content: 'bot-a writes into bot-b' };
    for (const [method, path, id, body] of [
      ['GET', '', sealed, undefined],
      ['GET', '/certificate', sealed, undefined],
      ['POST', '/verify', sealed, {}],
      ['POST', '/steps', active, step],
      ['POST', '/complete', active, undefined],
    ] as const) {
      sameAsUnknown(await as(botA, method, `/v1/traces/${id}${path}`, body), await as(botA, method, `/v1/traces/${unknown}${path}`, body), `${method} ${path}`);
    }
    const untouched = await as(owner.key, 'GET', `/v1/traces/${active}`);
    expect(untouched.body.trace).toMatchObject({ status: 'active', step_count: 0 });
    expect(untouched.body.steps).toEqual([]);
  });
});

describe('a confined key and who reaches a space', () => {
  const refused = (res: TestResponse, fields: string) => {
    expect(res.status, res.text).toBe(403);
    expect(errorOf(res).code).toBe('FORBIDDEN');
    expect(errorOf(res).message).toContain(fields);
  };

  it('cannot grant another account, agents or team writes, on creation or by an update; other changes go through', async () => {
    const spacesKey = await mint({ name: 'bot-a spaces', scopes: ['spaces:write'], agent_id: 'bot-a' });
    refused(await as(spacesKey, 'POST', '/v1/context-spaces', { name: 'leak', allowed_tenant_ids: [other.tenantId] }), 'allowed_tenant_ids');
    refused(await as(spacesKey, 'POST', '/v1/context-spaces', { name: 'leak', allowed_agent_ids: ['bot-b'] }), 'allowed_agent_ids');
    refused(await as(spacesKey, 'POST', '/v1/context-spaces', { name: 'leak', team_write: true }), 'team_write');

    const created = await as(spacesKey, 'POST', '/v1/context-spaces', { name: 'bot-a notes', allowed_tenant_ids: [], team_write: false });
    expect(created.status, created.text).toBe(201);
    const path = `/v1/context-spaces/${created.body.space_id}`;
    refused(await as(spacesKey, 'PUT', path, { allowed_tenant_ids: [other.tenantId] }), 'allowed_tenant_ids');
    refused(await as(spacesKey, 'PUT', path, { allowed_agent_ids: ['bot-b'] }), 'allowed_agent_ids');
    refused(await as(spacesKey, 'PUT', path, { team_write: true, name: 'renamed' }), 'team_write');
    const renamed = await as(spacesKey, 'PUT', path, { name: 'renamed', allowed_tenant_ids: [] });
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body).toMatchObject({ name: 'renamed', allowed_tenant_ids: [], allowed_agent_ids: [], team_write: false });
    // The other account still cannot read it; an unconfined key of the owner may grant it.
    expect((await as(other.key, 'GET', path)).status).toBe(403);
    expect((await as(owner.key, 'PUT', path, { allowed_tenant_ids: [other.tenantId] })).status).toBe(200);
    expect((await as(other.key, 'GET', path)).status).toBe(200);
  });

  it('a key confined to spaces cannot widen the spaces it reaches either', async () => {
    const space = await as(owner.key, 'POST', '/v1/context-spaces', { name: 'shared notes' });
    const spaceKey = await mint({ name: 'in one space', scopes: ['spaces:write'], space_ids: [space.body.space_id] });
    const path = `/v1/context-spaces/${space.body.space_id}`;
    refused(await as(spaceKey, 'PUT', path, { allowed_tenant_ids: [other.tenantId] }), 'allowed_tenant_ids');
    expect((await as(spaceKey, 'PUT', path, { description: 'what we share' })).status).toBe(200);
  });
});
