import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen } from '../shared/node/http-server';
import { PAYLOADS } from './actions-helpers';
import { createEngine, storageName, type Tenant, type TestEngine } from './harness';

const SECOND = 1000;

/** The official MCP client, over real HTTP, with a tenant's key. */
async function connect(base: string, key: string) {
  const client = new Client({ name: 'engram-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  return client;
}

type ToolAnswer = { isError?: boolean; structuredContent?: Record<string, unknown>; content: { type: string; text?: string }[] };

describe(`MCP over streamable HTTP (${storageName})`, () => {
  let e: TestEngine;
  let server: Server;
  let base: string;
  let pro: Tenant;
  let free: Tenant;
  let client: Client;
  const call = async (name: string, args: Record<string, unknown> = {}, c = client) => (await c.callTool({ name, arguments: args })) as ToolAnswer;

  beforeAll(async () => {
    e = await createEngine();
    ({ server } = await listen(e.app.fetch, { host: '127.0.0.1', port: 0 }));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    [pro, free] = [await e.newTenant('pro'), await e.newTenant('free')];
    client = await connect(base, pro.key);
  });
  afterAll(async () => {
    await client?.close();
    await new Promise((r) => server?.close(r));
    await e?.close();
  });

  it('lists the tools the key may call, with input schemas from the routes and annotations', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['remember', 'recall', 'forget', 'rollback', 'audit_verify', 'trace_start', 'add_fact', 'find_paths']));
    expect(names).toHaveLength(22);
    const recall = tools.find((t) => t.name === 'recall')!;
    expect(recall.inputSchema).toMatchObject({
      type: 'object',
      required: ['q'],
      properties: { q: { type: 'string' }, mode: { enum: ['semantic', 'keyword', 'hybrid'] } },
    });
    expect(recall.annotations).toMatchObject({ readOnlyHint: true, idempotentHint: true, openWorldHint: false });
    expect(tools.find((t) => t.name === 'rollback')!.annotations).toMatchObject({ destructiveHint: true });
    expect(tools.find((t) => t.name === 'rollback')!.inputSchema.required).toEqual(expect.arrayContaining(['target', 'confirm']));

    const freeClient = await connect(base, free.key);
    try {
      const freeNames = (await freeClient.listTools()).tools.map((t) => t.name);
      expect(freeNames).toEqual(expect.arrayContaining(['remember', 'recall', 'forget']));
      expect(freeNames).not.toContain('audit_verify');
      expect(freeNames).not.toContain('trace_start');
      expect(freeNames).not.toContain('add_fact');
    } finally {
      await freeClient.close();
    }
  });

  it('without a valid key: 401 pointing at the protected-resource metadata, which is served', async () => {
    for (const authorization of [undefined, 'Bearer sk_notakey0000000000000000000000']) {
      const res = await fetch(`${base}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(authorization ? { authorization } : {}) },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(res.status).toBe(401);
      const challenge = `resource_metadata="${base}/.well-known/oauth-protected-resource"`;
      // A presented token that is no good says so (RFC 6750 invalid_token); none at all is only the challenge.
      expect(res.headers.get('www-authenticate')).toBe(authorization ? `Bearer error="invalid_token", ${challenge}` : `Bearer ${challenge}`);
      expect(await res.json()).toMatchObject({ code: 'UNAUTHORIZED', status: 401 });
    }
    const metadata = (await (await fetch(`${base}/.well-known/oauth-protected-resource`)).json()) as Record<string, unknown>;
    expect(metadata).toMatchObject({ resource: `${base}/mcp`, authorization_servers: [base], bearer_methods_supported: ['header'] });
  });

  it('refuses a browser page from another origin', async () => {
    const res = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${pro.key}`,
        origin: 'http://evil.example',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(403);
    expect(((await res.json()) as { code: string }).code).toBe('FORBIDDEN');
  });

  it('remember, recall finds it, forget; the writes are audited via mcp and counted as API calls', async () => {
    const before = (await e.request('GET', '/v1/usage', { key: pro.key })).body;
    const stored = await call('remember', { observation: 'The customer prefers invoices in euros', tags: ['billing'] });
    expect(stored.isError, JSON.stringify(stored)).toBeFalsy();
    const id = stored.structuredContent!.uuid as string;
    expect(JSON.parse(stored.content[0].text!)).toEqual(stored.structuredContent);

    const found = await call('recall', { q: 'which currency for invoices', mode: 'hybrid', tags: ['billing'] });
    expect(found.isError).toBeFalsy();
    expect((found.structuredContent!.memories as { uuid: string }[]).map((r) => r.uuid)).toContain(id);

    const resource = await client.readResource({ uri: `engram://memories/${id}` });
    expect(JSON.parse((resource.contents[0] as { text: string }).text)).toMatchObject({ uuid: id });

    const audit = await e.request('GET', '/v1/audit', { key: pro.key });
    const created = audit.body.entries.find((x) => x.source_operation === 'memory.create');
    expect(created?.metadata).toMatchObject({ via: 'mcp' });

    expect((await call('forget', { id })).isError).toBeFalsy();
    const gone = await call('get_memory', { id });
    expect(gone.isError).toBe(true);
    expect(gone.structuredContent).toMatchObject({ code: 'NOT_FOUND', status: 404 });

    const after = (await e.request('GET', '/v1/usage', { key: pro.key })).body;
    // remember, recall, get (resource), forget, get: five tool calls, plus the GET /v1/audit between.
    expect(after.api_calls.current - before.api_calls.current).toBe(7);
  });

  it('API errors are tool results the model can read: validation, unknown ids, tier, unknown arguments', async () => {
    const bad = await call('recall', { q: 'x', limit: 1000 });
    expect(bad.isError).toBe(true);
    expect(bad.structuredContent).toMatchObject({ code: 'VALIDATION_ERROR', status: 400 });
    expect(bad.content[0].text).toMatch(/^VALIDATION_ERROR: .*limit/);
    expect(bad.structuredContent!.request_id).toMatch(/^req_/);

    const unknownField = await call('remember', { observation: 'x', colour: 'blue' });
    expect(unknownField.structuredContent).toMatchObject({ code: 'VALIDATION_ERROR' });
    const unknownArg = await call('list_memories', { colour: 'blue' });
    expect(unknownArg.structuredContent).toMatchObject({ code: 'VALIDATION_ERROR', message: 'Unknown argument: colour' });

    const freeClient = await connect(base, free.key);
    try {
      // A tool the tier lacks is not listed; called anyway, the route's tier gate answers.
      const gated = (await freeClient.callTool({ name: 'audit_verify', arguments: {} })) as ToolAnswer;
      expect(gated.isError).toBe(true);
      expect(gated.structuredContent).toMatchObject({ status: 403 });
    } finally {
      await freeClient.close();
    }
    // An unknown tool is a protocol error (MCP: -32602), not a tool result.
    await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toThrow(/no_such_tool not found/);
  });

  it('rollback needs its confirmation; preview first, then it rolls back', async () => {
    e.clock.advance(60 * SECOND);
    const mark = e.clock.now().toISOString();
    e.clock.advance(60 * SECOND);
    const late = await call('remember', { observation: 'A note written after the mark' });
    const lateId = late.structuredContent!.uuid as string;

    const preview = await call('rollback_preview', { target: mark });
    expect(preview.structuredContent).toMatchObject({ artifacts_deleted: 1, safe_rollback: false });

    const unconfirmed = await call('rollback', { target: mark });
    expect(unconfirmed.isError).toBe(true);
    expect(unconfirmed.structuredContent!.message).toMatch(/confirm: "ROLLBACK"/);
    expect((await call('get_memory', { id: lateId })).isError).toBeFalsy();

    const done = await call('rollback', { target: mark, confirm: 'ROLLBACK' });
    expect(done.structuredContent).toMatchObject({ success: true, operations_undone: 1 });
    expect((await call('get_memory', { id: lateId })).structuredContent).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('request_action held for review, approved over HTTP, then action_status says approved', async () => {
    const held = await call('request_action', PAYLOADS.pendingPlain);
    expect(held.structuredContent).toMatchObject({ status: 'pending_review' });
    const id = held.structuredContent!.action_id as string;
    e.clock.advance(6 * SECOND);
    // A person's key decides: the key that submitted the action (this client's) never does.
    const person = await e.request('POST', '/v1/keys/restricted', { key: pro.key, body: { name: 'reviewer', scopes: ['approvals:write'] } });
    const decided = await e.request('POST', `/v1/approvals/${id}/decision`, { key: person.body.api_key, body: { decision: 'approve', reason: 'fine' } });
    expect(decided.status, decided.text).toBe(200);
    expect((await call('action_status', { action_id: id })).structuredContent).toMatchObject({ status: 'approved' });
    expect((await call('explain_action', { action_id: id })).isError).toBeFalsy();
    const blocked = await call('request_action', PAYLOADS.blocked);
    expect(blocked.isError).toBe(true);
    expect(blocked.structuredContent).toMatchObject({ code: 'BLOCKED', status: 'blocked' });
  });

  it('a trace started, stepped, completed and verified; its certificate is a resource', async () => {
    const started = await call('trace_start', { agent_id: 'billing-agent', description: 'Answer a billing question' });
    expect(started.isError, JSON.stringify(started)).toBeFalsy();
    const traceId = started.structuredContent!.trace_id as string;
    const step = await call('trace_step', { trace_id: traceId, type: 'THOUGHT', content: 'Look up the currency' });
    expect(step.isError, JSON.stringify(step)).toBeFalsy();
    const completed = await call('trace_complete', { trace_id: traceId });
    expect(completed.isError, JSON.stringify(completed)).toBeFalsy();
    expect((await call('trace_verify', { trace_id: traceId })).structuredContent).toMatchObject({ valid: true });
    const certificate = await client.readResource({ uri: `engram://traces/${traceId}/certificate` });
    expect((certificate.contents[0] as { text: string }).text).toContain(traceId);
  });

  it('facts: add, query, find paths', async () => {
    expect((await call('add_fact', { subject: 'Alice', predicate: 'works_at', object: 'ACME' })).isError).toBeFalsy();
    expect((await call('add_fact', { subject: 'ACME', predicate: 'located_in', object: 'Berlin' })).isError).toBeFalsy();
    const facts = await call('query_facts', { subject: 'alice' });
    expect(facts.isError, JSON.stringify(facts)).toBeFalsy();
    const paths = await call('find_paths', { from: 'alice', to: 'berlin' });
    expect(paths.isError, JSON.stringify(paths)).toBeFalsy();
    expect((paths.structuredContent!.paths as unknown[]).length).toBeGreaterThan(0);
  });

  it("another tenant's ids name nothing through MCP", async () => {
    const other = await e.newTenant('pro');
    const theirs = await e.request('POST', '/v1/memories', { key: other.key, body: { observation: 'Private to the other tenant' } });
    const answer = await call('get_memory', { id: theirs.body.uuid });
    expect(answer.structuredContent).toMatchObject({ code: 'NOT_FOUND', status: 404 });
    await expect(client.readResource({ uri: `engram://memories/${theirs.body.uuid}` })).rejects.toThrow();
  });
});
