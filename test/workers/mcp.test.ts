import { env, exports } from 'cloudflare:workers';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testClient, uniqueEmail } from '../client';

/**
 * `/mcp` inside workerd, driven by the official MCP client through the worker's own fetch handler:
 * the SDK's workerd build, the same keys, and tool calls that go through Neon and Upstash.
 */
const worker = (exports as unknown as { default: { fetch(req: Request): Promise<Response> } }).default;
const bindings = env as unknown as Record<string, string>;
const BASE = 'https://engram.test';
const call = testClient((req) => worker.fetch(req), { base: BASE });

type ToolAnswer = { isError?: boolean; structuredContent?: Record<string, unknown> };

async function connect(key: string) {
  const client = new Client({ name: 'engram-workerd-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${BASE}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
    fetch: (url, init) => worker.fetch(new Request(url, init)),
  });
  await client.connect(transport);
  return client;
}

async function tenant(tier: 'free' | 'pro') {
  const res = await call('POST', '/admin/v1/tenants', { key: bindings.ADMIN_TOKEN, body: { email: uniqueEmail(`mcp-${tier}`), tier } });
  expect(res.status, res.text).toBe(201);
  return res.body.api_key;
}

describe('MCP in workerd', () => {
  let proKey: string;
  let client: Client;
  const tool = async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as ToolAnswer;

  beforeAll(async () => {
    proKey = await tenant('pro');
    client = await connect(proKey);
  });
  afterAll(async () => client?.close());

  it('lists the tools by tier and answers 401 with the resource metadata without a key', async () => {
    expect((await client.listTools()).tools).toHaveLength(22);
    const free = await connect(await tenant('free'));
    try {
      expect((await free.listTools()).tools.map((t) => t.name)).not.toContain('audit_verify');
    } finally {
      await free.close();
    }
    const res = await worker.fetch(new Request(`${BASE}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }));
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('/.well-known/oauth-protected-resource');
  });

  it('remember, recall, forget; audited via mcp', async () => {
    const stored = await tool('remember', { observation: 'The workerd tenant prefers dark roast coffee', tags: ['coffee'] });
    expect(stored.isError, JSON.stringify(stored)).toBeFalsy();
    const id = stored.structuredContent!.uuid as string;
    const found = await tool('recall', { q: 'dark roast coffee', mode: 'hybrid' });
    expect((found.structuredContent!.memories as { uuid: string }[]).map((m) => m.uuid)).toContain(id);
    const audit = await call('GET', '/v1/audit', { key: proKey });
    expect(audit.body.entries.find((e) => e.source_operation === 'memory.create')?.metadata).toMatchObject({ via: 'mcp' });
    expect((await tool('forget', { id })).isError).toBeFalsy();
    expect((await tool('get_memory', { id })).structuredContent).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('rollback without its confirmation writes nothing; a trace is signed and verifies', async () => {
    const refused = await tool('rollback', { target: '1 hour ago' });
    expect(refused.isError).toBe(true);
    const started = await tool('trace_start', { agent_id: 'workerd-agent' });
    const traceId = started.structuredContent!.trace_id as string;
    expect((await tool('trace_step', { trace_id: traceId, type: 'THOUGHT', content: 'check' })).isError).toBeFalsy();
    expect((await tool('trace_complete', { trace_id: traceId })).isError).toBeFalsy();
    expect((await tool('trace_verify', { trace_id: traceId })).structuredContent).toMatchObject({ valid: true });
  });

  it('request_action held for review, approved over HTTP, then action_status says so; API errors are tool results', async () => {
    const held = await tool('request_action', { action: 'http.post', params: { url: 'https://pastebin.com/api/api_post.php', text: 'meeting notes' } });
    expect(held.structuredContent, JSON.stringify(held)).toMatchObject({ status: 'pending_review' });
    const id = held.structuredContent!.action_id as string;
    // A person's key decides (the key that submitted the action never does), and solo mode takes a
    // decision 5 seconds after submission at the earliest, on the real clock here.
    const person = await call('POST', '/v1/keys/restricted', { key: proKey, body: { name: 'reviewer', scopes: ['approvals:write'] } });
    const personKey = person.body.api_key as string;
    const early = await call('POST', `/v1/approvals/${id}/decision`, { key: personKey, body: { decision: 'approve', reason: 'fine' } });
    expect(early.status).toBe(409);
    await new Promise((r) => setTimeout(r, 5_100));
    const decided = await call('POST', `/v1/approvals/${id}/decision`, { key: personKey, body: { decision: 'approve', reason: 'fine' } });
    expect(decided.status, decided.text).toBe(200);
    expect((await tool('action_status', { action_id: id })).structuredContent).toMatchObject({ status: 'approved' });
    const bad = await tool('recall', { q: 'x', limit: 1000 });
    expect(bad.isError).toBe(true);
    expect(bad.structuredContent).toMatchObject({ code: 'VALIDATION_ERROR', status: 400 });
  });
});
