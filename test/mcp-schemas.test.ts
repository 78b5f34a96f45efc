import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen } from '../shared/node/http-server';
import { TIERS } from '../shared/platform/contract/tiers';
import { createEngine, storageName, type Tenant, type TestEngine } from './harness';
import { lintTool } from './mcp-schema-lint';

/** The official MCP client, over real HTTP, with a tenant's key. */
async function connect(base: string, key: string) {
  const client = new Client({ name: 'engram-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  return client;
}

type Json = Record<string, unknown>;
type ToolAnswer = { isError?: boolean; structuredContent?: Json; content: { type: string; text?: string }[] };

/** Every schema of a tool's input, with where it is, walked through properties, items and anyOf branches. */
function* schemasOf(schema: Json, path: string): Generator<[string, Json]> {
  yield [path, schema];
  for (const [name, sub] of Object.entries((schema.properties ?? {}) as Record<string, Json>)) yield* schemasOf(sub, `${path}.${name}`);
  if (schema.items && typeof schema.items === 'object') yield* schemasOf(schema.items as Json, `${path}[]`);
  for (const sub of (schema.anyOf ?? []) as Json[]) yield* schemasOf(sub, path);
}

const FLAG_WORDS = new Set(['true', 'false', '1', '0', 'yes', 'no', 'on', 'off']);

describe(`MCP tool schemas any host accepts (${storageName})`, () => {
  let e: TestEngine;
  let server: Server;
  let base: string;
  const tenants = {} as Record<(typeof TIERS)[number], Tenant>;

  /** The raw tools/list answer, as a host that asks for JSON gets it. */
  const rawList = async (key: string) => {
    const res = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${key}`,
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.headers.get('content-type')).toContain('application/json');
    const text = await res.text();
    return { bytes: Buffer.byteLength(text), tools: (JSON.parse(text) as { result: { tools: { name: string; inputSchema: Json }[] } }).result.tools };
  };

  beforeAll(async () => {
    e = await createEngine();
    ({ server } = await listen(e.app.fetch, { host: '127.0.0.1', port: 0 }));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    for (const tier of TIERS) tenants[tier] = await e.newTenant(tier);
  });
  afterAll(async () => {
    await new Promise((r) => server?.close(r));
    await e?.close();
  });

  it.each(TIERS)("passes the Inspector's --strict schema check for a %s key: no errors, no warnings", async (tier) => {
    const client = await connect(base, tenants[tier].key);
    try {
      const { tools } = await client.listTools();
      expect(tools.length).toBeGreaterThan(0);
      expect(tools.flatMap(lintTool)).toEqual([]);
    } finally {
      await client.close();
    }
    // What a 2025-era host gets is the same list.
    const { tools } = await rawList(tenants[tier].key);
    expect(tools.flatMap(lintTool)).toEqual([]);
  });

  it('the check finds what the Inspector flags', () => {
    const tool = {
      name: 't',
      inputSchema: {
        type: 'object',
        properties: {
          a: { type: ['number', 'null'] },
          b: { type: 'object', additionalProperties: {} },
          c: { $ref: 'https://example.com/schema.json' },
          d: true,
          e: { type: 'object', additionalProperties: true },
        },
        additionalProperties: false,
      },
    };
    expect(lintTool(tool).map((f) => `${f.severity} ${f.rule} ${f.path}`)).toEqual([
      'warning type-union inputSchema.properties.a',
      'warning untyped-schema inputSchema.properties.b.additionalProperties',
      'warning remote-ref inputSchema.properties.c',
      'error boolean-schema inputSchema.properties.d',
    ]);
  });

  it('lists are arrays and flags booleans in every tool', async () => {
    const { tools } = await rawList(tenants.enterprise.key);
    for (const tool of tools) {
      for (const [path, schema] of schemasOf(tool.inputSchema, tool.name)) {
        const where = `${path}: ${JSON.stringify(schema)}`;
        if (schema.type === 'string' || schema.type === undefined) {
          expect(String(schema.description ?? ''), where).not.toMatch(/comma-separated/i);
          const values = schema.enum as unknown[] | undefined;
          expect(values && values.length > 0 && values.every((v) => FLAG_WORDS.has(String(v).toLowerCase())), where).toBeFalsy();
        }
      }
      const tags = (tool.inputSchema.properties as Record<string, Json>).tags;
      if (tags) expect(tags.type, `${tool.name}.tags`).toBe('array');
    }
    const recall = tools.find((t) => t.name === 'recall')!.inputSchema.properties as Record<string, Json>;
    expect(recall.tags).toMatchObject({ type: 'array', items: { type: 'string' } });
    expect(recall.include_superseded).toMatchObject({ type: 'boolean', default: false });
  });

  it('recall defaults to the mode its description recommends, and takes tags as an array and flags as booleans', async () => {
    const client = await connect(base, tenants.pro.key);
    const call = async (name: string, args: Json) => (await client.callTool({ name, arguments: args })) as ToolAnswer;
    try {
      const { tools } = await client.listTools();
      const recall = tools.find((t) => t.name === 'recall')!;
      const mode = (recall.inputSchema.properties as Record<string, Json>).mode;
      expect(mode.default).toBe('hybrid');
      expect(mode.description).toMatch(/`hybrid` \(best\)/);

      const first = await call('remember', { observation: 'Invoices go out in euros', tags: ['billing'] });
      expect(first.isError, JSON.stringify(first)).toBeFalsy();
      await call('remember', { observation: 'The office plant needs water on Mondays', tags: ['office'] });
      const newer = await call('remember', { observation: 'Invoices go out in euros', tags: ['billing'] });
      expect(newer.isError, JSON.stringify(newer)).toBeFalsy();

      const found = await call('recall', { q: 'invoice currency', tags: ['billing', 'finance'] });
      expect(found.isError, JSON.stringify(found)).toBeFalsy();
      expect(found.structuredContent!.mode).toBe('hybrid');
      const ids = (answer: ToolAnswer) => (answer.structuredContent!.memories as { uuid: string }[]).map((m) => m.uuid);
      expect(ids(found)).toEqual([newer.structuredContent!.uuid]);

      const all = await call('recall', { q: 'invoice currency', tags: ['billing'], include_superseded: true, mode: 'keyword' });
      expect(all.structuredContent!.mode).toBe('keyword');
      expect(ids(all).sort()).toEqual([first.structuredContent!.uuid, newer.structuredContent!.uuid].sort());

      const listed = await call('list_memories', { tags: ['office'] });
      expect((listed.structuredContent!.memories as { observation: string }[]).map((m) => m.observation)).toEqual(['The office plant needs water on Mondays']);

      // A wrong type is the route's own refusal, as over HTTP.
      const wrong = await call('recall', { q: 'x', include_superseded: 'maybe' });
      expect(wrong.isError).toBe(true);
      expect(wrong.structuredContent).toMatchObject({ code: 'VALIDATION_ERROR' });
    } finally {
      await client.close();
    }
  });

  it('the whole tools/list for a Pro key stays under 16 KB', async () => {
    const { bytes, tools } = await rawList(tenants.pro.key);
    expect(tools.map((t) => t.name)).toContain('add_fact');
    expect(bytes).toBeLessThan(16 * 1024);
    expect(JSON.stringify(tools)).not.toContain('"example"');
  });
});
