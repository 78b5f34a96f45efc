import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { errorOf, type RequestOptions, testClient } from '../client';
import worker from '../../functions/worker';

/**
 * The agent runtime inside workerd, on Postgres through the Neon driver: one mission through
 * start → checkpoint → a memory written by its agent → rollback with revert_memories → complete.
 */
const bindings = env as unknown as Record<string, string>;
const pending: Promise<unknown>[] = [];
const ctx = { waitUntil: (p: Promise<unknown>) => void pending.push(p), passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
const request = testClient((req) => worker.fetch(req, bindings, ctx), { base: 'https://engram.test' });
const call = async <T = never, M extends string = string, P extends string = string>(method: M, path: P, opts: RequestOptions = {}) => {
  const res = await request<T, M, P>(method, path, opts);
  await Promise.all(pending.splice(0));
  return res;
};

let key = '';
beforeAll(async () => {
  const res = await call('POST', '/admin/v1/tenants', {
    key: bindings.ADMIN_TOKEN,
    body: { email: `runtime-${crypto.randomUUID().slice(0, 12)}@example.com`, tier: 'free' },
  });
  expect(res.status, res.text).toBe(201);
  key = res.body.api_key;
});

describe('worker in workerd: agent runtime', () => {
  it('runs a mission through start, a checkpoint and a rollback that reverts its memories', async () => {
    const agent = await call('POST', '/v1/agents', { key, body: { agent_id: 'workerd-agent', name: 'Workerd agent', provider: 'openai', model: 'gpt-4.1' } });
    expect(agent.status, agent.text).toBe(201);
    const mission = await call('POST', '/v1/missions', { key, body: { agent_id: 'workerd-agent', goal: 'Prove the runtime runs in workerd' } });
    expect(mission.status, mission.text).toBe(201);
    const id = mission.body.mission_id as string;
    expect((await call('POST', `/v1/missions/${id}/start`, { key })).body.status).toBe('running');
    const checkpoint = await call('POST', `/v1/missions/${id}/checkpoints`, { key, body: { label: 'clean', state: { step: 1 } } });
    expect(checkpoint.status, checkpoint.text).toBe(201);
    await new Promise((r) => setTimeout(r, 20)); // the memory is written after the checkpoint
    const memory = await call('POST', '/v1/memories', { key, body: { observation: 'A wrong conclusion the agent reached.', agent_id: 'workerd-agent' } });
    expect(memory.status, memory.text).toBe(201);
    await call('POST', `/v1/missions/${id}/checkpoints`, { key, body: { label: 'after the mistake', state: { step: 2 } } });

    const rolled = await call('POST', `/v1/missions/${id}/rollback`, {
      key,
      body: { checkpoint_id: checkpoint.body.checkpoint_id, reason: 'wrong conclusion', revert_memories: true },
    });
    expect(rolled.status, rolled.text).toBe(200);
    expect(rolled.body).toMatchObject({ checkpoints_discarded: 1, memories_reverted: 1, mission: { status: 'running', state: { step: 1 } } });
    expect((await call('GET', `/v1/memories/${memory.body.id}`, { key })).status).toBe(404);
    const list = await call('GET', `/v1/missions/${id}/checkpoints`, { key });
    expect(list.body.checkpoints.map((c: { label: string }) => c.label)).toEqual(['clean']);
    expect((await call('POST', `/v1/missions/${id}/complete`, { key })).body.status).toBe('completed');
    const again = await call('POST', `/v1/missions/${id}/resume`, { key });
    expect([again.status, errorOf(again).mission_status]).toEqual([409, 'completed']);
  });
});
