import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { integration } from './harness';
import { type ServerProcess, startServer, stopServer } from './server-process';

/**
 * OpenTelemetry on Node: the server sends its spans over OTLP/HTTP to a receiver started here. A
 * request's span is named by its operationId and joins the caller's W3C `traceparent`; the
 * embedding call (and on Postgres each query) is a span under it; the webhook delivery the request
 * caused continues the same trace and passes `traceparent` to the receiver. Memory operations get
 * their GenAI semantic-convention spans (`create_memory`, `search_memory`, `delete_memory`) under the
 * request's, with the query text only when opted in. No attribute carries
 * stored text, the key, the tenant or its e-mail.
 */
const ADMIN = 'tracing-admin-token-0123456789';
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: { key: string; value: Record<string, unknown> }[];
}

async function receiver<T>(handle: (path: string, body: string, headers: IncomingHttpHeaders) => T): Promise<{ url: string; got: T[] }> {
  const got: T[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      got.push(handle(req.url ?? '/', Buffer.concat(chunks).toString('utf8'), req.headers));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, got };
}

async function until<T>(what: string, find: () => T | undefined): Promise<T> {
  for (let i = 0; i < 150; i++) {
    const found = find();
    if (found !== undefined) return found;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no ${what}`);
}

const hex = (bytes: number) => [...crypto.getRandomValues(new Uint8Array(bytes))].map((b) => b.toString(16).padStart(2, '0')).join('');

describe('OpenTelemetry traces over OTLP/HTTP', () => {
  it('a span per request named by operationId under the caller’s traceparent, with embedding, database and webhook spans', async () => {
    const otlp = await receiver((path, body) =>
      path === '/v1/traces' ? (JSON.parse(body) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] }) : null,
    );
    const spans = () => otlp.got.flatMap((b) => b?.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)) ?? []);
    const hook = await receiver((_path, _body, headers) => headers);

    const storage: Record<string, string> = integration.databaseUrl
      ? { DATABASE_URL: integration.databaseUrl, REDIS_URL: integration.redisUrl ?? '' }
      : { DATA_DIR: 'memory://' };
    const server: ServerProcess = await startServer(
      { ...storage, ADMIN_TOKEN: ADMIN, EMBEDDING_PROVIDER: 'hash', LOG_LEVEL: 'warn', WEBHOOKS_ALLOW_INSECURE: '1', OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url },
      { timeoutMs: 90_000 },
    );
    cleanups.push(() => stopServer(server));
    const email = `tracing-${crypto.randomUUID().slice(0, 8)}@example.com`;
    const created = (await (
      await fetch(`${server.base}/admin/v1/tenants`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ email, tier: 'pro' }),
      })
    ).json()) as { api_key: string; tenant_id: string };
    const headers = { authorization: `Bearer ${created.api_key}`, 'content-type': 'application/json' };
    const webhook = await fetch(`${server.base}/v1/webhooks`, { method: 'POST', headers, body: JSON.stringify({ url: hook.url, events: ['memory.created'] }) });
    expect(webhook.status, await webhook.clone().text()).toBe(201);

    const traceId = hex(16);
    const callerSpan = hex(8);
    const stored = await fetch(`${server.base}/v1/memories`, {
      method: 'POST',
      headers: { ...headers, traceparent: `00-${traceId}-${callerSpan}-01` },
      body: JSON.stringify({ observation: 'The tracing canary lives in the attic' }),
    });
    expect(stored.status).toBe(201);

    const request = await until('memories.store span', () => spans().find((s) => s.name === 'memories.store' && s.traceId === traceId));
    expect(request.parentSpanId).toBe(callerSpan);
    expect(request.attributes).toEqual(expect.arrayContaining([{ key: 'http.response.status_code', value: { intValue: 201 } }]));

    // The memory operation's own span, as the GenAI semantic conventions name it, under the request's.
    const create = await until('create_memory span', () => spans().find((s) => s.name === 'create_memory' && s.traceId === traceId));
    expect(create.parentSpanId).toBe(request.spanId);
    const embedding = await until('embedding span', () => spans().find((s) => s.name === 'embedding' && s.traceId === traceId));
    expect(embedding.parentSpanId).toBe(create.spanId);
    const memoryId = ((await stored.json()) as { id: string }).id;
    expect(create.attributes).toEqual(
      expect.arrayContaining([
        { key: 'gen_ai.operation.name', value: { stringValue: 'create_memory' } },
        { key: 'gen_ai.memory.record.id', value: { stringValue: memoryId } },
      ]),
    );
    if (integration.databaseUrl) await until('db.query span', () => spans().find((s) => s.name === 'db.query' && s.traceId === traceId));
    const searchTrace = hex(16);
    const found = await fetch(`${server.base}/v1/memories/search?q=${encodeURIComponent('tracing canary attic')}&mode=hybrid`, {
      headers: { ...headers, traceparent: `00-${searchTrace}-${hex(8)}-01` },
    });
    expect(found.status).toBe(200);
    expect(found.headers.get('server-timing')).toMatch(/^embed;dur=/);
    const searched = await until('search_memory span', () => spans().find((s) => s.name === 'search_memory' && s.traceId === searchTrace));
    expect(searched.attributes).toEqual(
      expect.arrayContaining([
        { key: 'gen_ai.operation.name', value: { stringValue: 'search_memory' } },
        { key: 'gen_ai.memory.record.count', value: { intValue: 1 } },
      ]),
    );
    // The query text only with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT (checked below: nothing carries it).
    expect(searched.attributes?.map((a) => a.key)).not.toContain('gen_ai.memory.query.text');
    // MCP `remember` runs the same route, so the same GenAI span records the memory it stored.
    const mcpTrace = hex(16);
    const remembered = await fetch(`${server.base}/mcp`, {
      method: 'POST',
      headers: { ...headers, accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25', traceparent: `00-${mcpTrace}-${hex(8)}-01` },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'remember', arguments: { observation: 'The tracing canary also nests in the attic' } },
      }),
    });
    expect(remembered.status).toBe(200);
    const viaMcp = ((await remembered.json()) as { result: { structuredContent: { id: string } } }).result.structuredContent.id;
    const mcpCreate = await until('create_memory span of MCP remember', () =>
      spans().find((s) => s.name === 'create_memory' && s.attributes?.some((a) => a.key === 'gen_ai.memory.record.id' && a.value.stringValue === viaMcp)),
    );
    expect(mcpCreate.traceId).toBe(mcpTrace);
    const deleteTrace = hex(16);
    const deleted = await fetch(`${server.base}/v1/memories/${memoryId}`, {
      method: 'DELETE',
      headers: { ...headers, traceparent: `00-${deleteTrace}-${hex(8)}-01` },
    });
    expect(deleted.status).toBe(200);
    const removal = await until('delete_memory span', () => spans().find((s) => s.name === 'delete_memory' && s.traceId === deleteTrace));
    expect(removal.attributes).toEqual(expect.arrayContaining([{ key: 'gen_ai.memory.record.id', value: { stringValue: memoryId } }]));

    // The delivery continues the trace, and the receiver gets its traceparent.
    const delivered = await until('webhook delivery', () => hook.got.find((h) => typeof h.traceparent === 'string'));
    expect(String(delivered.traceparent).split('-')[1]).toBe(traceId);
    await until('webhook.deliver span', () => spans().find((s) => s.name === 'webhook.deliver' && s.traceId === traceId));

    await stopServer(server); // flushes what is still batched
    const everything = JSON.stringify(otlp.got);
    for (const secret of ['canary', 'attic', created.api_key, created.tenant_id, email]) expect(everything).not.toContain(secret);
  }, 120_000);

  it('memory spans carry the search query only when the operator opts in', async () => {
    const otlp = await receiver((path, body) =>
      path === '/v1/traces' ? (JSON.parse(body) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] }) : null,
    );
    const spans = () => otlp.got.flatMap((b) => b?.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)) ?? []);
    const server: ServerProcess = await startServer(
      {
        DATA_DIR: 'memory://',
        ADMIN_TOKEN: ADMIN,
        EMBEDDING_PROVIDER: 'hash',
        LOG_LEVEL: 'warn',
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
      },
      { timeoutMs: 90_000 },
    );
    cleanups.push(() => stopServer(server));
    const created = (await (
      await fetch(`${server.base}/admin/v1/tenants`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ email: `tracing-optin-${crypto.randomUUID().slice(0, 8)}@example.com`, tier: 'free' }),
      })
    ).json()) as { api_key: string };
    const traceId = hex(16);
    const res = await fetch(`${server.base}/v1/memories/search?q=where%20is%20the%20lighthouse`, {
      headers: { authorization: `Bearer ${created.api_key}`, traceparent: `00-${traceId}-${hex(8)}-01` },
    });
    expect(res.status).toBe(200);
    const searched = await until('search_memory span', () => spans().find((s) => s.name === 'search_memory' && s.traceId === traceId));
    expect(searched.attributes).toEqual(expect.arrayContaining([{ key: 'gen_ai.memory.query.text', value: { stringValue: 'where is the lighthouse' } }]));
  }, 120_000);
});
