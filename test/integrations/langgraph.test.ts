import { Annotation, END, getStore, type LangGraphRunnableConfig, START, StateGraph } from '@langchain/langgraph';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngramStore } from '../../integrations/langgraph/src/index';
import { createEngine, type Tenant, type TestEngine } from '../harness';
import { sdkFor } from '../sdk/helpers';

/** engram-langgraph's EngramStore against the real app in process, and inside a real LangGraph graph. */
let engine: TestEngine;
let tenant: Tenant;
beforeAll(async () => {
  engine = await createEngine();
  tenant = await engine.newTenant('pro');
});
afterAll(async () => engine?.close());

const storeFor = (key = tenant.key, opts: { agentId?: string } = {}) => new EngramStore({ client: sdkFor(engine, key), ...opts });

describe('EngramStore', () => {
  it('puts, gets, overwrites and deletes an item, one memory per key', async () => {
    const store = storeFor((await engine.newTenant('pro')).key);
    expect(await store.get(['users', 'u1'], 'prefs')).toBeNull();
    await store.put(['users', 'u1'], 'prefs', { theme: 'dark', fontSize: 14 });
    const first = await store.get(['users', 'u1'], 'prefs');
    expect(first).toMatchObject({ namespace: ['users', 'u1'], key: 'prefs', value: { theme: 'dark', fontSize: 14 } });
    expect(first?.createdAt).toBeInstanceOf(Date);
    await store.put(['users', 'u1'], 'prefs', { theme: 'light' });
    expect((await store.get(['users', 'u1'], 'prefs'))?.value).toEqual({ theme: 'light' });
    // The item is one memory, found by its namespace tags, holding the value as JSON.
    const memories = (await store.client.memories.list({ tags: 'langgraph:users.u1' }).page()).memories;
    expect(memories).toHaveLength(1);
    expect(JSON.parse(memories[0].observation)).toEqual({ theme: 'light' });
    expect(memories[0].tags).toEqual(expect.arrayContaining(['langgraph', 'langgraph:users', 'langgraph:users.u1']));
    await store.delete(['users', 'u1'], 'prefs');
    expect(await store.get(['users', 'u1'], 'prefs')).toBeNull();
  });

  it('keeps two keys holding the same value apart, and namespaces apart', async () => {
    const store = storeFor((await engine.newTenant('pro')).key);
    await store.put(['a'], 'k1', { same: true });
    await store.put(['a'], 'k2', { same: true });
    await store.put(['b'], 'k1', { same: false });
    expect((await store.get(['a'], 'k1'))?.value).toEqual({ same: true });
    expect((await store.get(['a'], 'k2'))?.value).toEqual({ same: true });
    expect((await store.get(['b'], 'k1'))?.value).toEqual({ same: false });
  });

  it('searches under a prefix with a query, a filter, offset and limit', async () => {
    const store = storeFor((await engine.newTenant('pro')).key);
    await store.batch([
      { namespace: ['docs', 'u1'], key: 'd1', value: { text: 'Espresso needs finely ground coffee beans', kind: 'coffee', rating: 5 } },
      { namespace: ['docs', 'u1'], key: 'd2', value: { text: 'Green tea brews best below boiling', kind: 'tea', rating: 4 } },
      { namespace: ['docs', 'u2'], key: 'd3', value: { text: 'Cold brew coffee steeps overnight', kind: 'coffee', rating: 3 } },
      { namespace: ['other'], key: 'd4', value: { text: 'Coffee shop opening hours', kind: 'coffee', rating: 1 } },
    ]);
    const ranked = await store.search(['docs'], { query: 'coffee beans espresso', limit: 5 });
    expect(ranked.map((i) => i.key)).toContain('d1');
    expect(ranked.map((i) => i.key)).not.toContain('d4');
    expect(ranked[0].key).toBe('d1');
    expect(typeof ranked[0].score).toBe('number');

    const coffee = await store.search(['docs'], { filter: { kind: 'coffee' } });
    expect(coffee.map((i) => i.key).sort()).toEqual(['d1', 'd3']);
    expect((await store.search(['docs'], { filter: { rating: { $gte: 4 } } })).map((i) => i.key).sort()).toEqual(['d1', 'd2']);
    expect((await store.search(['docs', 'u1'], { query: 'tea', filter: { kind: { $ne: 'coffee' } } })).map((i) => i.key)).toEqual(['d2']);
    expect(await store.search(['docs'], { limit: 2 })).toHaveLength(2);
    const all = (await store.search(['docs'], { limit: 10 })).map((i) => i.key);
    const rest = (await store.search(['docs'], { offset: 1, limit: 10 })).map((i) => i.key);
    expect(rest).toEqual(all.slice(1));
    expect((await store.search([], { limit: 10 })).map((i) => i.key).sort()).toEqual(['d1', 'd2', 'd3', 'd4']);
  });

  it('lists namespaces with prefix, suffix, depth, limit and offset', async () => {
    const store = storeFor((await engine.newTenant('pro')).key);
    await store.put(['users', 'u1', 'memories'], 'm', { x: 1 });
    await store.put(['users', 'u2', 'memories'], 'm', { x: 2 });
    await store.put(['users', 'u2', 'prefs'], 'p', { x: 3 });
    await store.put(['teams', 't1'], 'n', { x: 4 });
    expect(await store.listNamespaces()).toEqual([
      ['teams', 't1'],
      ['users', 'u1', 'memories'],
      ['users', 'u2', 'memories'],
      ['users', 'u2', 'prefs'],
    ]);
    expect(await store.listNamespaces({ prefix: ['users'], suffix: ['memories'] })).toEqual([
      ['users', 'u1', 'memories'],
      ['users', 'u2', 'memories'],
    ]);
    expect(await store.listNamespaces({ prefix: ['users', '*', 'prefs'] })).toEqual([['users', 'u2', 'prefs']]);
    expect(await store.listNamespaces({ maxDepth: 1 })).toEqual([['teams'], ['users']]);
    expect(await store.listNamespaces({ limit: 1, offset: 1 })).toEqual([['users', 'u1', 'memories']]);
  });

  it('answers a mixed batch in order: reads see the store before the batch, the last write of a key wins', async () => {
    const store = storeFor((await engine.newTenant('pro')).key);
    await store.put(['cfg'], 'mode', { value: 'old' });
    const [got, , searched, , namespaces] = await store.batch([
      { namespace: ['cfg'], key: 'mode' },
      { namespace: ['cfg'], key: 'mode', value: { value: 'first' } },
      { namespacePrefix: ['cfg'], limit: 10 },
      { namespace: ['cfg'], key: 'mode', value: { value: 'last' } },
      { limit: 10, offset: 0 },
    ] as const);
    expect(got?.value).toEqual({ value: 'old' });
    expect(searched.map((i) => i.value)).toEqual([{ value: 'old' }]);
    expect(namespaces).toEqual([['cfg']]);
    expect((await store.get(['cfg'], 'mode'))?.value).toEqual({ value: 'last' });
    expect((await store.client.memories.list({ tags: 'langgraph:cfg' }).page()).memories).toHaveLength(1);
  });

  it('confines an agent-scoped store to its own items', async () => {
    const key = (await engine.newTenant('pro')).key;
    const a = storeFor(key, { agentId: 'agent-a' });
    const b = storeFor(key, { agentId: 'agent-b' });
    await a.put(['notes'], 'n1', { text: 'written by a' });
    expect(await b.get(['notes'], 'n1')).toBeNull();
    expect((await a.get(['notes'], 'n1'))?.value).toEqual({ text: 'written by a' });
    expect((await a.client.memories.list({ agent_id: 'agent-a' }).page()).memories).toHaveLength(1);
  });

  it('refuses a namespace LangGraph would refuse', async () => {
    const store = storeFor();
    await expect(store.put([], 'k', { x: 1 })).rejects.toThrow(/empty/);
    await expect(store.put(['a.b'], 'k', { x: 1 })).rejects.toThrow(/Invalid namespace/);
  });
});

describe('EngramStore in a StateGraph', () => {
  it('is the store a node reads and writes through config.store and getStore()', async () => {
    const store = storeFor((await engine.newTenant('pro')).key);
    await store.put(['memories', 'alice'], 'seed', { text: 'Alice is allergic to peanuts' });
    const State = Annotation.Root({ user: Annotation<string>, question: Annotation<string>, recalled: Annotation<string[]> });
    const recall = async (state: typeof State.State, config: LangGraphRunnableConfig) => {
      const found = await config.store!.search(['memories', state.user], { query: state.question, limit: 3 });
      return { recalled: found.map((i) => String(i.value.text)) };
    };
    const remember = async (state: typeof State.State) => {
      await getStore()!.put(['memories', state.user], `q-${state.recalled.length}`, { text: `Asked: ${state.question}` });
      return {};
    };
    const graph = new StateGraph(State)
      .addNode('recall', recall)
      .addNode('remember', remember)
      .addEdge(START, 'recall')
      .addEdge('recall', 'remember')
      .addEdge('remember', END)
      .compile({ store });
    const out = await graph.invoke({ user: 'alice', question: 'what food allergies does she have?' });
    expect(out.recalled).toContain('Alice is allergic to peanuts');
    expect((await store.get(['memories', 'alice'], 'q-1'))?.value).toEqual({ text: 'Asked: what food allergies does she have?' });
    // The graph's write is an engram memory: audited like any other.
    const [m] = (await store.client.memories.list({ tags: 'langgraph:memories.alice' }).page()).memories.filter((x) => x.observation.includes('Asked'));
    expect(m.observation).toContain('food allergies');
  });
});
