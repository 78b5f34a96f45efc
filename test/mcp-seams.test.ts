import { request as httpRequest } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen } from '../shared/node/http-server';
import { createEngine, storageName, type TestEngine } from './harness';

/** The official MCP client, over real HTTP, with a tenant's key. */
async function connect(base: string, key: string) {
  const client = new Client({ name: 'engram-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  return client;
}

type ToolAnswer = { isError?: boolean; structuredContent?: Record<string, unknown>; content: { type: string; text?: string }[] };

const ping = (id: number) => ({ jsonrpc: '2.0', id, method: 'ping' });

describe(`MCP at its seams (${storageName})`, () => {
  let e: TestEngine;
  let server: Server;
  let base: string;
  let port: number;

  /** A raw POST to /mcp: the SDK client sends no batches and no Host of its choosing. */
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }>((resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port,
          path: '/mcp',
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
        },
      );
      req.on('error', reject);
      req.end(typeof body === 'string' ? body : JSON.stringify(body));
    });

  beforeAll(async () => {
    // A free key's window is 6 messages a minute here, so a batch can exceed it.
    e = await createEngine({ env: { RATE_LIMIT_SCALE: '0.01' } });
    ({ server } = await listen(e.app.fetch, { host: '127.0.0.1', port: 0 }));
    port = (server.address() as AddressInfo).port;
    base = `http://127.0.0.1:${port}`;
  });
  afterAll(async () => {
    await new Promise((r) => server?.close(r));
    await e?.close();
  });

  it('every message of a batch counts against the MCP window; a batch past what is left is refused', async () => {
    const t = await e.newTenant('free');
    const auth = { authorization: `Bearer ${t.key}` };
    const first = await post([ping(1), ping(2), ping(3), ping(4), ping(5)], auth);
    expect(first.status, first.body).toBe(200);
    expect(JSON.parse(first.body)).toHaveLength(5);
    expect(first.headers['x-ratelimit-remaining']).toBe('1');
    // One message is left of six: a batch of two does not fit.
    const second = await post([ping(6), ping(7)], auth);
    expect(second.status, second.body).toBe(429);
    expect(JSON.parse(second.body)).toMatchObject({ code: 'RATE_LIMITED', usage: { metric: 'requests_per_minute', limit: 6 } });
    expect(second.headers.ratelimit).toMatch(/^"minute";r=0;t=\d+$/);

    const other = await e.newTenant('free');
    const tooLarge = await post(
      Array.from({ length: 7 }, (_, i) => ping(i)),
      { authorization: `Bearer ${other.key}` },
    );
    expect(tooLarge.status, tooLarge.body).toBe(429);
  });

  it('answers carry the RateLimit headers: the MCP window, or the route a tool call went through', async () => {
    const pro = await e.newTenant('pro');
    const auth = { authorization: `Bearer ${pro.key}` };
    const listed = await post({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, auth);
    expect(listed.status, listed.body).toBe(200);
    expect(listed.headers['ratelimit-policy']).toBe('"minute";q=50;w=60');
    expect(listed.headers.ratelimit).toMatch(/^"minute";r=49;t=\d+$/);
    expect(listed.headers['x-ratelimit-limit']).toBe('50');

    const called = await post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'list_memories', arguments: {} } }, auth);
    expect(called.status, called.body).toBe(200);
    // The route's own window and the month's API calls, as over HTTP.
    expect(called.headers['ratelimit-policy']).toMatch(/^"minute";q=50;w=60, "month";q=\d+$/);
    expect(called.headers.ratelimit).toMatch(/^"minute";r=49;t=\d+, "month";r=\d+;t=\d+$/);

    const refused = await post({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } }, auth);
    expect(refused.headers.ratelimit).toMatch(/^"minute";r=48;t=\d+$/);
  });

  it("the 401's resource_metadata comes from the listening address, never from the Host header", async () => {
    const res = await post({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, { host: 'evil.example' });
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe(`Bearer resource_metadata="${base}/.well-known/oauth-protected-resource"`);

    const configured = await createEngine({ env: { PUBLIC_URL: 'https://engram.example.com/' } });
    try {
      const viaPublic = await configured.request('POST', '/mcp', { body: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers: { host: 'evil.example' } });
      expect(viaPublic.status).toBe(401);
      expect(viaPublic.headers.get('www-authenticate')).toBe('Bearer resource_metadata="https://engram.example.com/.well-known/oauth-protected-resource"');
      // In process (no socket, no PUBLIC_URL) there is no address to name: a plain Bearer challenge.
      const bare = await e.request('POST', '/mcp', { body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
      expect(bare.headers.get('www-authenticate')).toBe('Bearer');
    } finally {
      await configured.close();
    }
  });

  it('a path argument "." or ".." is refused as invalid, never a step to another route', async () => {
    const pro = await e.newTenant('pro');
    const client = await connect(base, pro.key);
    try {
      for (const trace_id of ['..', '.']) {
        const answer = (await client.callTool({ name: 'trace_verify', arguments: { trace_id } })) as ToolAnswer;
        expect(answer.isError).toBe(true);
        expect(answer.structuredContent).toMatchObject({ code: 'VALIDATION_ERROR', status: 400, details: [{ path: 'trace_id' }] });
      }
      // A slash is one segment's text, percent-encoded: an id that names nothing.
      const slashed = (await client.callTool({ name: 'get_memory', arguments: { id: '../../v1/usage' } })) as ToolAnswer;
      expect(slashed.isError).toBe(true);
      expect(slashed.structuredContent).toMatchObject({ status: expect.any(Number) });
      expect([400, 404]).toContain(slashed.structuredContent!.status);
      await expect(client.readResource({ uri: 'engram://memories/%2E%2E' })).rejects.toThrow();
    } finally {
      await client.close();
    }
  });

  it('arguments nested 50,000 deep are invalid params, not an internal error', async () => {
    const pro = await e.newTenant('pro');
    const deep = `${'['.repeat(50_000)}"x"${']'.repeat(50_000)}`;
    const auth = { authorization: `Bearer ${pro.key}` };
    for (const args of [`{"observation":${deep}}`, `{"action_type":"x","params":{"a":${deep}}}`]) {
      const name = args.includes('action_type') ? 'request_action' : 'remember';
      const res = await post(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"${name}","arguments":${args}}}`, auth);
      expect(res.status, res.body).toBe(200);
      const { result } = JSON.parse(res.body) as { result: ToolAnswer };
      expect(result.isError).toBe(true);
      expect(result.structuredContent).toMatchObject({ code: 'VALIDATION_ERROR', status: 400 });
      expect(result.structuredContent!.message).toMatch(/levels deep/);
    }
  });
});
