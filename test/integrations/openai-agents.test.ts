import { Agent, type AgentInputItem, type Model, type ModelRequest, type ModelResponse, Runner, setTracingDisabled, Usage } from '@openai/agents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngramSession } from '../../integrations/openai-agents/src/index';
import { createEngine, type Tenant, type TestEngine } from '../harness';
import { sdkFor } from '../sdk/helpers';

/** engram-openai-agents' EngramSession against the real app in process, driven by the SDK's own Runner. */
let engine: TestEngine;
let tenant: Tenant;
beforeAll(async () => {
  setTracingDisabled(true);
  engine = await createEngine();
  tenant = await engine.newTenant('pro');
});
afterAll(async () => engine?.close());

/** A model that answers without a network: it says how many user messages it was given, and remembers each request. */
class CountingModel implements Model {
  readonly requests: ModelRequest[] = [];
  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request);
    const input = typeof request.input === 'string' ? [] : request.input;
    const users = input.filter((i) => 'role' in i && i.role === 'user').length;
    return {
      usage: new Usage(),
      output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: `I have seen ${users} user messages` }] }],
    };
  }
  // biome-ignore lint/correctness/useYield: this model never streams; the tests use non-streamed runs.
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('not streamed');
  }
}

const user = (content: string): AgentInputItem => ({ role: 'user', content });

describe('EngramSession', () => {
  it('keeps a conversation across runs of the SDK Runner, and across session objects', async () => {
    const client = sdkFor(engine, tenant.key);
    const model = new CountingModel();
    const agent = new Agent({ name: 'assistant', instructions: 'Be brief.', model });
    const runner = new Runner();
    const session = new EngramSession({ client, sessionId: 'conv-1' });
    const first = await runner.run(agent, 'My name is Alice.', { session });
    expect(first.finalOutput).toBe('I have seen 1 user messages');
    const second = await runner.run(agent, 'What is my name?', { session });
    expect(second.finalOutput).toBe('I have seen 2 user messages');
    // The second request carried the first exchange from engram.
    expect(JSON.stringify(model.requests[1].input)).toContain('My name is Alice.');
    expect(JSON.stringify(model.requests[1].input)).toContain('I have seen 1 user messages');

    // Another process resuming the same conversation sees the same items in order.
    const resumed = new EngramSession({ client: sdkFor(engine, tenant.key), sessionId: 'conv-1' });
    const items = await resumed.getItems();
    expect(items).toHaveLength(4);
    expect(items[0]).toMatchObject({ role: 'user', content: 'My name is Alice.' });
    expect(items[2]).toMatchObject({ role: 'user', content: 'What is my name?' });
    expect(items[3]).toMatchObject({ role: 'assistant' });
    expect(await resumed.getItems(2)).toEqual(items.slice(2));
    // Each item is a memory, searchable by what was said.
    const found = await client.memories.search({ q: 'Alice name', mode: 'hybrid', tags: 'session:conv-1' });
    expect(found.memories.some((m) => m.observation.includes('My name is Alice.'))).toBe(true);
  });

  it('adds, pops and clears; sessions and agents stay apart', async () => {
    const client = sdkFor(engine, (await engine.newTenant('pro')).key);
    const a = new EngramSession({ client, agentId: 'agent-a' });
    const b = new EngramSession({ client, agentId: 'agent-a' });
    expect(await a.getSessionId()).not.toBe(await b.getSessionId());
    await a.addItems([user('one'), user('two'), user('three')]);
    await a.addItems([user('four')]);
    await b.addItems([user('other conversation')]);
    expect((await a.getItems()).map((i) => (i as { content: string }).content)).toEqual(['one', 'two', 'three', 'four']);
    expect(await a.getItems(0)).toEqual([]);
    expect(await a.popItem()).toEqual(user('four'));
    expect((await a.getItems()).map((i) => (i as { content: string }).content)).toEqual(['one', 'two', 'three']);
    await a.clearSession();
    expect(await a.getItems()).toEqual([]);
    expect(await a.popItem()).toBeUndefined();
    expect(await b.getItems()).toEqual([user('other conversation')]);
    // Another agent of the same account does not see agent-a's conversation.
    const sessionId = await b.getSessionId();
    expect(await new EngramSession({ client, agentId: 'agent-b', sessionId }).getItems()).toEqual([]);
  });
});
