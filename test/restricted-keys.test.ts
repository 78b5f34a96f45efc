import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOOLS } from '../functions/mcp/tools';
import { listen } from '../shared/node/http-server';
import { createEngine, errorOf, type Tenant, type TestEngine } from './harness';

const HOUR = 3_600_000;

let engine: TestEngine;
let owner: Tenant;

beforeAll(async () => {
  engine = await createEngine();
  owner = await engine.newTenant('pro');
});
afterAll(() => engine.close());

async function mint(body: Record<string, unknown>, key = owner.key) {
  const res = await engine.request('POST', '/v1/keys/restricted', { key, body });
  expect(res.status, res.text).toBe(201);
  return res.body as { key_id: string; api_key: string; scopes: string[]; agent_id: string | null; space_ids: string[] | null };
}

const store = async (key: string, body: Record<string, unknown>) => engine.request('POST', '/v1/memories', { key, body });

async function stored(key: string, body: Record<string, unknown>): Promise<string> {
  const res = await store(key, body);
  expect(res.status, res.text).toBe(201);
  return res.body.uuid;
}

function refusedFor(res: { status: number; body: unknown; text: string }, scope: string) {
  expect(res.status, res.text).toBe(403);
  expect(res.body).toMatchObject({ code: 'FORBIDDEN', required_scope: scope });
  expect(errorOf(res as never).message).toContain(scope);
}

describe('minting, listing, revoking', () => {
  it('mints a restricted key of the caller’s account, shown once, and lists it with its scopes', async () => {
    const res = await engine.request('POST', '/v1/keys/restricted', {
      key: owner.key,
      body: { name: 'reader', scopes: ['memories:read', 'traces:write'], agent_id: 'bot-1' },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ name: 'reader', scopes: ['memories:read', 'traces:write'], agent_id: 'bot-1', space_ids: null, expires_at: null });
    expect(res.body.api_key).toMatch(/^sk_[0-9A-Za-z]{43}$/);
    expect(Date.parse(res.body.created_at)).not.toBeNaN();

    const list = await engine.request('GET', '/v1/keys', { key: owner.key });
    expect(list.status).toBe(200);
    expect(list.text).not.toContain(res.body.api_key);
    const own = list.body.keys.find((k) => k.key_id === owner.keyId);
    expect(own).toMatchObject({ restricted: false, scopes: ['*'], name: null, agent_id: null, space_ids: null });
    const restricted = list.body.keys.find((k) => k.key_id === res.body.key_id);
    expect(restricted).toMatchObject({ restricted: true, name: 'reader', scopes: ['memories:read', 'traces:write'], agent_id: 'bot-1', status: 'active' });
  });

  it('refuses unknown scopes naming them, and bad names', async () => {
    const res = await engine.request('POST', '/v1/keys/restricted', {
      key: owner.key,
      body: { name: 'x', scopes: ['memories:read', 'bogus:read', 'memories:admin'] },
    });
    expect(res.status).toBe(400);
    expect(errorOf(res).code).toBe('VALIDATION_ERROR');
    expect(errorOf(res).message).toContain('bogus:read');
    expect(errorOf(res).message).toContain('memories:admin');
    const empty = await engine.request('POST', '/v1/keys/restricted', { key: owner.key, body: { name: '', scopes: ['*'] } });
    expect(empty.status).toBe(400);
    const long = await engine.request('POST', '/v1/keys/restricted', { key: owner.key, body: { name: 'n'.repeat(101), scopes: ['*'] } });
    expect(long.status).toBe(400);
  });

  it('a revoked restricted key answers 401 at once', async () => {
    const key = await mint({ name: 'short-lived', scopes: ['memories:read'] });
    expect((await engine.request('GET', '/v1/memories', { key: key.api_key })).status).toBe(200);
    const revoked = await engine.request('POST', '/v1/keys/revoke', { key: owner.key, body: { key_id: key.key_id } });
    expect(revoked.status).toBe(200);
    expect((await engine.request('GET', '/v1/memories', { key: key.api_key })).status).toBe(401);
  });

  it('a restricted key expires at expires_at', async () => {
    const key = await mint({ name: 'an hour', scopes: ['memories:read'], expires_at: new Date(engine.clock.now().getTime() + HOUR).toISOString() });
    expect((await engine.request('GET', '/v1/memories', { key: key.api_key })).status).toBe(200);
    engine.clock.advance(2 * HOUR);
    const res = await engine.request('GET', '/v1/memories', { key: key.api_key });
    expect(res.status).toBe(401);
    const list = await engine.request('GET', '/v1/keys', { key: owner.key });
    expect(list.body.keys.find((k) => k.key_id === key.key_id)?.status).toBe('expired');
  });

  it('at most 50 live restricted keys per account; revoking one frees a place', async () => {
    const tenant = await engine.newTenant('free');
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) ids.push((await mint({ name: `k${i}`, scopes: ['memories:read'] }, tenant.key)).key_id);
    const refused = await engine.request('POST', '/v1/keys/restricted', { key: tenant.key, body: { name: 'one more', scopes: ['memories:read'] } });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'svc_ram.v1.tier.limit_exceeded', usage: { metric: 'restricted_keys', current: 50, limit: 50 } });
    expect((await engine.request('POST', '/v1/keys/revoke', { key: tenant.key, body: { key_id: ids[0] } })).status).toBe(200);
    await mint({ name: 'one more', scopes: ['memories:read'] }, tenant.key);
  });
});

describe('what a restricted key may call', () => {
  it('the families docs/security.md names are exactly those of the keyed routes', () => {
    const doc = readFileSync(new URL('../docs/security.md', import.meta.url), 'utf8');
    const bullet = doc.slice(doc.indexOf('- **Scopes.**'), doc.indexOf('- **`agent_id`.**'));
    const listed = new Set([...bullet.matchAll(/`([a-z]+)`/g)].map((m) => m[1]));
    expect([...listed].sort()).toEqual([...engine.app.registry.scopeFamilies].sort());
  });

  it('a read scope can list and search but not store; other families are refused', async () => {
    await stored(owner.key, { observation: 'The invoices are paid in euros.' });
    const reader = await mint({ name: 'reader', scopes: ['memories:read'] });
    expect((await engine.request('GET', '/v1/memories', { key: reader.api_key })).status).toBe(200);
    const found = await engine.request('GET', '/v1/memories/search?q=invoice%20currency', { key: reader.api_key });
    expect(found.status).toBe(200);
    expect(found.body.memories.length).toBeGreaterThan(0);
    refusedFor(await store(reader.api_key, { observation: 'Not allowed.' }), 'memories:write');
    refusedFor(await engine.request('GET', '/v1/traces', { key: reader.api_key }), 'traces:read');
    refusedFor(await engine.request('GET', '/v1/keys', { key: reader.api_key }), 'keys:read');
  });

  it('write implies read, and * is every family', async () => {
    const writer = await mint({ name: 'writer', scopes: ['memories:write'] });
    await stored(writer.api_key, { observation: 'Written by a restricted key.' });
    expect((await engine.request('GET', '/v1/memories', { key: writer.api_key })).status).toBe(200);
    const all = await mint({ name: 'all', scopes: ['*'] });
    expect((await engine.request('GET', '/v1/traces', { key: all.api_key })).status).toBe(200);
  });

  it('a restricted key never mints or rotates keys, nor revokes an unrestricted one, whatever its scopes', async () => {
    const keys = await mint({ name: 'keys', scopes: ['*'] });
    refusedFor(await engine.request('POST', '/v1/keys/restricted', { key: keys.api_key, body: { name: 'child', scopes: ['memories:read'] } }), 'unrestricted');
    refusedFor(await engine.request('POST', '/v1/keys/rotate', { key: keys.api_key }), 'unrestricted');
    refusedFor(await engine.request('POST', '/v1/keys/revoke', { key: keys.api_key, body: { key_id: owner.keyId } }), 'unrestricted');
    // It may revoke a restricted key, itself included.
    const other = await mint({ name: 'other', scopes: ['memories:read'] });
    expect((await engine.request('POST', '/v1/keys/revoke', { key: keys.api_key, body: { key_id: other.key_id } })).status).toBe(200);
    expect((await engine.request('POST', '/v1/keys/revoke', { key: keys.api_key, body: { key_id: keys.key_id } })).status).toBe(200);
    expect((await engine.request('GET', '/v1/keys', { key: owner.key })).status).toBe(200);
  });
});

describe('agent_id pins a key to one agent', () => {
  it('stores as its agent, refuses another, and sees only its agent’s memories', async () => {
    const tenant = await engine.newTenant('pro');
    const foreign = await stored(tenant.key, { observation: 'The other agent knows the vault code.', agent_id: 'other' });
    const bot = await mint({ name: 'bot', scopes: ['memories:write'], agent_id: 'bot' }, tenant.key);

    const own = await stored(bot.api_key, { observation: 'The bot remembers the vault is in the basement.' });
    expect((await engine.request('GET', `/v1/memories/${own}`, { key: tenant.key })).body.agent_id).toBe('bot');
    await stored(bot.api_key, { observation: 'Naming its own agent is fine.', agent_id: 'bot' });
    const other = await store(bot.api_key, { observation: 'Pretending to be another agent.', agent_id: 'other' });
    expect(other.status).toBe(403);
    expect(errorOf(other).code).toBe('FORBIDDEN');
    const batch = await engine.request('POST', '/v1/memories/batch', {
      key: bot.api_key,
      body: { memories: [{ observation: 'Batch as itself.' }, { observation: 'Batch as another.', agent_id: 'other' }] },
    });
    expect(batch.status).toBe(200);
    expect(batch.body.results.map((r: { status: number }) => r.status)).toEqual([201, 403]);

    const list = await engine.request('GET', '/v1/memories', { key: bot.api_key });
    expect(list.body.memories.length).toBe(3);
    expect(list.body.memories.every((m) => m.agent_id === 'bot')).toBe(true);
    const search = await engine.request('GET', '/v1/memories/search?q=vault%20code&mode=hybrid', { key: bot.api_key });
    expect(search.body.memories.map((m: { uuid: string }) => m.uuid)).not.toContain(foreign);
    const semantic = await engine.request('GET', '/v1/memories/search?q=vault%20code', { key: bot.api_key });
    expect(semantic.body.memories.map((m: { uuid: string }) => m.uuid)).not.toContain(foreign);
    expect((await engine.request('GET', `/v1/memories/${foreign}`, { key: bot.api_key })).status).toBe(404);
    expect((await engine.request('PATCH', `/v1/memories/${foreign}`, { key: bot.api_key, body: { importance: 9 } })).status).toBe(404);
    expect((await engine.request('DELETE', `/v1/memories/${foreign}`, { key: bot.api_key })).status).toBe(404);
    const now = await engine.request('GET', '/v1/context/now', { key: bot.api_key });
    expect(now.body.recent_memories.every((m) => m.agent_id === 'bot')).toBe(true);
    expect(now.body.recent_count).toBe(3);
    const exported = await engine.request('GET', '/v1/memories/export?format=json', { key: bot.api_key });
    expect(exported.status).toBe(200);
    expect(exported.text).not.toContain('vault code');
    expect(exported.text).toContain('basement');
    // The owner's unrestricted key still sees everything.
    expect((await engine.request('GET', `/v1/memories/${foreign}`, { key: tenant.key })).status).toBe(200);
  });
});

describe('a confined key outside the memories family', () => {
  it('submits actions and starts traces as its agent, lists only its traces, and cannot reach tenant-wide routes', async () => {
    const tenant = await engine.newTenant('pro');
    const bot = await mint({ name: 'agent bot', scopes: ['*'], agent_id: 'bot' }, tenant.key);
    await engine.request('POST', '/v1/traces', { key: tenant.key, body: { agent_id: 'other', description: 'Another agent reasons.' } });

    const action = await engine.request('POST', '/v1/actions', { key: bot.api_key, body: { action: 'email.send', params: { to: 'a@example.com' } } });
    expect(action.status, action.text).toBe(200);
    expect(action.body.agent_id).toBe('bot');
    const asOther = await engine.request('POST', '/v1/actions', { key: bot.api_key, body: { action: 'email.send', params: {}, agent_id: 'other' } });
    expect(asOther.status).toBe(403);
    const trace = await engine.request('POST', '/v1/traces', { key: bot.api_key, body: { agent_id: 'bot', description: 'The bot reasons.' } });
    expect(trace.status, trace.text).toBe(201);
    const traces = await engine.request('GET', '/v1/traces', { key: bot.api_key });
    expect(traces.body.traces.map((t: { agent_id: string }) => t.agent_id)).toEqual(['bot']);
    expect((await engine.request('GET', '/v1/traces?agent_id=other', { key: bot.api_key })).status).toBe(403);

    // Routes that would show or change other agents' memories refuse it, whatever its scopes.
    for (const [method, path] of [
      ['GET', '/v1/rollback/preview?target=2026-01-01T00:00:00Z'],
      ['GET', '/v1/audit'],
      ['GET', '/v1/replay/timeline'],
      ['GET', '/v1/events/stream'],
      ['GET', '/v1/webhooks'],
      ['GET', `/v1/actions/${action.body.action_id}/explain`],
    ] as const) {
      refusedFor(await engine.request(method, path, { key: bot.api_key }), 'unconfined');
    }
    expect((await engine.request('GET', '/v1/audit/verify', { key: bot.api_key })).status).toBe(200);
  });
});

describe('space_ids confine a key to some spaces', () => {
  it('reads and stores memories only in its spaces, and sees only those spaces', async () => {
    const tenant = await engine.newTenant('pro');
    const space = async (name: string) => (await engine.request('POST', '/v1/context-spaces', { key: tenant.key, body: { name } })).body.space_id as string;
    const [inside, outside] = [await space('inside'), await space('outside')];
    const inA = await stored(tenant.key, { observation: 'Inside the confined space.', space_id: inside });
    const inB = await stored(tenant.key, { observation: 'In another space.', space_id: outside });
    const loose = await stored(tenant.key, { observation: 'In no space at all.' });

    const unknown = await engine.request('POST', '/v1/keys/restricted', {
      key: tenant.key,
      body: { name: 'bad', scopes: ['memories:read'], space_ids: ['urn:uuid:01935f6e-8a2b-7c3d-9e4f-5a6b7c8d9e0f'] },
    });
    expect(unknown.status).toBe(400);
    const key = await mint({ name: 'confined', scopes: ['memories:write', 'spaces:read'], space_ids: [inside] }, tenant.key);
    expect(key.space_ids).toEqual([inside]);

    const list = await engine.request('GET', '/v1/memories', { key: key.api_key });
    expect(list.body.memories.map((m: { uuid: string }) => m.uuid)).toEqual([inA]);
    for (const id of [inB, loose]) expect((await engine.request('GET', `/v1/memories/${id}`, { key: key.api_key })).status).toBe(404);
    const search = await engine.request('GET', '/v1/memories/search?q=space', { key: key.api_key });
    expect(search.body.memories.map((m: { uuid: string }) => m.uuid)).toEqual([inA]);

    expect((await store(key.api_key, { observation: 'Into the other space.', space_id: outside })).status).toBe(403);
    expect((await store(key.api_key, { observation: 'Into no space.' })).status).toBe(403);
    await stored(key.api_key, { observation: 'Into its own space.', space_id: inside });

    const spaces = await engine.request('GET', '/v1/context-spaces', { key: key.api_key });
    expect(spaces.body.spaces.map((s: { space_id: string }) => s.space_id)).toEqual([inside]);
    expect((await engine.request('GET', `/v1/context-spaces/${outside}`, { key: key.api_key })).status).toBe(404);
    expect((await engine.request('GET', `/v1/context-spaces/${outside}/memories`, { key: key.api_key })).status).toBe(404);
    expect((await engine.request('GET', `/v1/context-spaces/${inside}/memories`, { key: key.api_key })).body.memories).toHaveLength(2);
    const writer = await mint({ name: 'space writer', scopes: ['spaces:write'], space_ids: [inside] }, tenant.key);
    expect((await engine.request('POST', '/v1/context-spaces', { key: writer.api_key, body: { name: 'new' } })).status).toBe(403);
    expect((await engine.request('DELETE', `/v1/context-spaces/${outside}`, { key: writer.api_key })).status).toBe(404);
  });
});

describe('MCP with a restricted key', () => {
  let server: Server;
  let base: string;
  beforeAll(async () => {
    ({ server } = await listen(engine.app.fetch, { host: '127.0.0.1', port: 0 }));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((r) => server?.close(r)));

  it('a key confined to an agent lists only the tools whose routes honour its confinement', async () => {
    const bot = await mint({ name: 'mcp bot', scopes: ['*'], agent_id: 'mcp-bot' });
    const client = new Client({ name: 'engram-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${bot.api_key}` } } }));
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['remember', 'recall', 'forget', 'request_action', 'action_status', 'trace_start', 'audit_verify']));
      for (const tenantWide of ['rollback', 'rollback_preview', 'memory_history', 'explain_action', 'add_fact']) expect(names).not.toContain(tenantWide);
      const refused = (await client.callTool({ name: 'rollback_preview', arguments: { target: '2026-01-01T00:00:00Z' } })) as {
        isError?: boolean;
        structuredContent?: Record<string, unknown>;
      };
      expect(refused.isError).toBe(true);
      expect(refused.structuredContent).toMatchObject({ code: 'FORBIDDEN', required_scope: 'unconfined' });
    } finally {
      await client.close();
    }
  });

  it('tools/list shows only the tools its scopes allow; calling another answers the route’s 403', async () => {
    const reader = await mint({ name: 'mcp reader', scopes: ['memories:read'] });
    const client = new Client({ name: 'engram-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${reader.api_key}` } } }),
    );
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      const readMemoryTools = TOOLS.filter((t) => t.operationId.startsWith('memories.') && t.readOnly).map((t) => t.name);
      expect(names.sort()).toEqual(readMemoryTools.sort());
      expect(names).toContain('recall');
      expect(names).not.toContain('remember');
      const refused = (await client.callTool({ name: 'remember', arguments: { observation: 'Not with this key.' } })) as {
        isError?: boolean;
        structuredContent?: Record<string, unknown>;
      };
      expect(refused.isError).toBe(true);
      expect(refused.structuredContent).toMatchObject({ code: 'FORBIDDEN', required_scope: 'memories:write' });
    } finally {
      await client.close();
    }
  });
});
