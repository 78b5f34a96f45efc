import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { hostileValue, type Json, mutateBody, Rng, type Schema, SchemaWalker } from './generate';

/**
 * Fuzzes `/mcp` over real HTTP: the tools each key lists (through the official client) are called
 * with arguments generated from their input schemas, well-formed and mutated, through the client
 * and as raw JSON-RPC; raw malformed JSON-RPC bodies and headers go to the endpoint too. Failures:
 * an HTTP 5xx, a JSON-RPC error for a well-formed call of a listed tool (an API error must be a
 * tool result), a tool error whose structured content is not the one error body, and the
 * JSON-RPC internal error (-32603) anywhere.
 */

export interface McpFuzzTarget {
  /** The server's origin, `http://127.0.0.1:port`. */
  base: string;
  newTenant(tier: 'free' | 'pro'): Promise<{ key: string }>;
}

export interface McpFuzzOptions {
  seed: number;
  seconds: number;
  requests?: number;
}

export interface McpFuzzFailure {
  kind: '5xx' | 'jsonrpc-error' | 'internal-error' | 'error-body' | 'broken-response';
  what: string;
  request: string;
  response: string;
  count: number;
}

export interface McpFuzzReport {
  seed: number;
  requests: number;
  tools: number;
  outcomes: Record<string, number>;
  failures: McpFuzzFailure[];
  seconds: number;
}

const PROTOCOL_VERSION = '2025-11-25';
const ID_KEY = /(^|_)id$|^uuid$/;
const truncate = (s: string, n = 500) => (s.length > n ? `${s.slice(0, n)}… (${s.length} chars)` : s);
const safeJson = (v: unknown) => {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
};

type Tool = { name: string; inputSchema: Schema };
type ToolAnswer = { isError?: boolean; structuredContent?: Record<string, unknown> };

/** Why a tool result breaks the contract, or null: an error is the one error body. */
export function toolResultProblem(answer: ToolAnswer): string | null {
  if (!answer || typeof answer !== 'object') return 'not an object';
  if (!answer.isError) return null;
  const b = answer.structuredContent as Record<string, unknown> | undefined;
  if (!b || typeof b !== 'object') return 'an error without structured content';
  const status = b.code === 'BLOCKED' ? 'blocked' : b.status;
  const fine =
    typeof b.error === 'string' &&
    typeof b.code === 'string' &&
    (typeof b.status === 'number' ? b.status >= 400 && b.status < 500 : b.status === status && status === 'blocked') &&
    typeof b.message === 'string' &&
    typeof b.request_id === 'string';
  return fine ? null : 'an error whose structured content is not the one error body';
}

/** The JSON-RPC messages of an answer, JSON or an SSE stream. */
function messagesOf(contentType: string | null, text: string): unknown[] {
  if (contentType?.startsWith('text/event-stream')) {
    return text
      .split('\n')
      .filter((l) => l.startsWith('data:'))
      .map((l) => JSON.parse(l.slice(5)));
  }
  if (!text) return [];
  const parsed = JSON.parse(text);
  return Array.isArray(parsed) ? parsed : [parsed];
}

export async function fuzzMcp(target: McpFuzzTarget, opts: McpFuzzOptions): Promise<McpFuzzReport> {
  const started = Date.now();
  const deadline = started + opts.seconds * 1000;
  const maxRequests = opts.requests ?? Number.POSITIVE_INFINITY;
  const r = new Rng(opts.seed);
  const outcomes: Record<string, number> = {};
  const count = (k: string) => {
    outcomes[k] = (outcomes[k] ?? 0) + 1;
  };
  const failures = new Map<string, McpFuzzFailure>();
  const fail = (kind: McpFuzzFailure['kind'], what: string, request: unknown, response: unknown) => {
    const key = `${kind} ${what}`;
    const seen = failures.get(key);
    if (seen) seen.count++;
    else failures.set(key, { kind, what, request: truncate(safeJson(request)), response: truncate(safeJson(response)), count: 1 });
  };

  // A free and a pro tenant, each with its connected client and the tools it lists.
  const callers: { tier: string; key: string; client: Client; tools: Tool[] }[] = [];
  for (const tier of ['free', 'pro'] as const) {
    const { key } = await target.newTenant(tier);
    const client = new Client({ name: 'engram-fuzz', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${target.base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
    callers.push({ tier, key, client, tools: (await client.listTools()).tools as Tool[] });
  }
  const allTools = new Map(callers.flatMap((c) => c.tools.map((t) => [t.name, t] as const)));
  // Every tool's `$defs` are components of the same document: one walker resolves them all.
  const defs: Record<string, Schema> = {};
  for (const t of allTools.values()) Object.assign(defs, t.inputSchema.$defs ?? {});
  const walker = new SchemaWalker(defs);

  // Ids from earlier answers, so calls reach resources that exist.
  const pools = new Map<string, string[]>();
  const harvest = (v: unknown, key = '', depth = 0): void => {
    if (depth > 6 || v === null || v === undefined) return;
    if (typeof v === 'string') {
      if (ID_KEY.test(key) && v.length <= 200) {
        const pool = pools.get(key) ?? [];
        if (!pool.includes(v)) pool.push(v);
        if (pool.length > 30) pool.shift();
        pools.set(key, pool);
      }
    } else if (Array.isArray(v)) v.slice(0, 10).forEach((x) => harvest(x, key, depth + 1));
    else if (typeof v === 'object') for (const [k, x] of Object.entries(v)) harvest(x, k, depth + 1);
  };
  const idFor = (name: string): string | undefined => {
    const pool = pools.get(name) ?? (ID_KEY.test(name) ? pools.get('uuid') : undefined);
    return pool?.length ? r.pick(pool) : undefined;
  };

  let sent = 0;
  const argumentsFor = (tool: Tool, valid: boolean): Json => {
    let args = walker.valid(r, tool.inputSchema, '', 0, idFor);
    if (!valid) {
      const roll = r.next();
      if (roll < 0.1) args = hostileValue(r);
      else {
        args = mutateBody(r, args);
        if (r.chance(0.3)) args = mutateBody(r, args);
      }
    }
    return args;
  };

  /** A tool call through the official client: a JSON-RPC error rejects, a tool error resolves. */
  const viaClient = async (caller: (typeof callers)[number], tool: Tool, args: Record<string, Json>) => {
    sent++;
    const request = { tool: tool.name, tier: caller.tier, arguments: args };
    try {
      const answer = (await caller.client.callTool({ name: tool.name, arguments: args })) as ToolAnswer;
      count(answer.isError ? `tool error ${answer.structuredContent?.status}` : 'tool result');
      const problem = toolResultProblem(answer);
      if (problem) fail('error-body', `${tool.name}: ${problem}`, request, answer);
      else if (!answer.isError) harvest(answer.structuredContent);
    } catch (err) {
      const code = (err as { code?: number }).code;
      count(`client error ${code}`);
      fail(code === -32603 ? 'internal-error' : 'jsonrpc-error', `${tool.name}: ${code}`, request, err instanceof Error ? err.message : err);
    }
  };

  /** A raw POST to /mcp; returns the JSON-RPC messages of the answer. */
  const raw = async (what: string, body: string, headers: Record<string, string> = {}, method = 'POST') => {
    sent++;
    let res: Response;
    let text: string;
    try {
      res = await fetch(`${target.base}/mcp`, {
        method,
        headers: { accept: 'application/json, text/event-stream', 'content-type': 'application/json', 'mcp-protocol-version': PROTOCOL_VERSION, ...headers },
        body: method === 'GET' || method === 'HEAD' ? undefined : body,
      });
      text = await res.text();
    } catch (err) {
      fail('broken-response', what, body, err instanceof Error ? `${err.name}: ${err.message}` : err);
      return [];
    }
    count(`http ${res.status}`);
    if (res.status >= 500) {
      fail('5xx', `${what}: ${res.status}`, body, text);
      return [];
    }
    let messages: unknown[];
    try {
      messages = messagesOf(res.headers.get('content-type'), text);
    } catch {
      fail('broken-response', `${what}: an answer that is not JSON`, body, text);
      return [];
    }
    for (const m of messages as { error?: { code?: number } }[]) {
      if (m?.error?.code === -32603) fail('internal-error', what, body, m.error);
    }
    return messages as { result?: ToolAnswer; error?: { code: number; message: string } }[];
  };

  /** A tool call as raw JSON-RPC, with any arguments (also ones the client would not send). */
  const viaRaw = async (caller: (typeof callers)[number], tool: Tool, args: Json) => {
    const wellFormed = args !== null && typeof args === 'object' && !Array.isArray(args);
    const body = JSON.stringify({ jsonrpc: '2.0', id: r.int(1, 1e6), method: 'tools/call', params: { name: tool.name, arguments: args } });
    const [answer] = await raw(`tools/call ${tool.name}`, body, { authorization: `Bearer ${caller.key}` });
    if (!answer) return;
    if (answer.error) {
      count(`jsonrpc ${answer.error.code}`);
      if (wellFormed) fail('jsonrpc-error', `${tool.name}: ${answer.error.code}`, body, answer);
      return;
    }
    const result = answer.result as ToolAnswer;
    count(result?.isError ? `tool error ${result.structuredContent?.status}` : 'tool result');
    const problem = toolResultProblem(result);
    if (problem) fail('error-body', `${tool.name}: ${problem}`, body, result);
    else if (!result.isError) harvest(result.structuredContent);
  };

  /** Malformed JSON-RPC and HTTP: any answer but a 5xx or an internal error. */
  const malformed = async (caller: (typeof callers)[number]) => {
    const auth = { authorization: `Bearer ${caller.key}` };
    const id = r.pick<Json>([1, 'x', null, {}, [], 1.5, -1, 2 ** 60, 'a'.repeat(5000)]);
    const name = r.pick<Json>([r.pick([...allTools.keys()]), 'no_such_tool', '', null, 1, ['recall'], { name: 'recall' }, '__proto__', 'a'.repeat(10_000)]);
    const bodies: (() => string)[] = [
      () => r.pick(['', '{', 'null', '[]', '"x"', '1', 'true', '{"a":', '\u0000', `${'['.repeat(5000)}${']'.repeat(5000)}`, `{"x":${'['.repeat(100_000)}`]),
      () => JSON.stringify(hostileValue(r)),
      () => JSON.stringify({ jsonrpc: r.pick(['1.0', 2, null, '2.0']), id, method: r.pick(['tools/call', 'tools/list', 'ping', 1, null]) }),
      () =>
        JSON.stringify({
          jsonrpc: '2.0',
          id,
          method: 'tools/call',
          params: r.pick([null, 1, 'x', [], {}, { name }, { name, arguments: hostileValue(r) }, { arguments: {} }]),
        }),
      () => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {}, _meta: hostileValue(r) } }),
      () => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/list', params: r.pick([null, 1, { cursor: hostileValue(r) }, hostileValue(r)]) }),
      () =>
        JSON.stringify({
          jsonrpc: '2.0',
          id,
          method: 'resources/read',
          params: {
            uri: r.pick<Json>([
              `engram://memories/${r.pick(['', '%00', '..', 'x'.repeat(5000), idFor('uuid') ?? 'x', '%ED%A0%80'])}`,
              'engram://traces/%zz/certificate',
              'engram://nothing',
              'file:///etc/passwd',
              hostileValue(r),
            ]),
          },
        }),
      () =>
        JSON.stringify({
          jsonrpc: '2.0',
          id,
          method: r.pick(['resources/templates/list', 'resources/list', 'prompts/list', 'completion/complete', 'logging/setLevel', 'no/such', '']),
        }),
      () =>
        JSON.stringify({
          jsonrpc: '2.0',
          id,
          method: 'initialize',
          params: r.pick([{}, hostileValue(r), { protocolVersion: hostileValue(r), capabilities: hostileValue(r), clientInfo: hostileValue(r) }]),
        }),
      () =>
        JSON.stringify({
          jsonrpc: '2.0',
          method: r.pick(['notifications/initialized', 'notifications/cancelled', 'notifications/x']),
          params: hostileValue(r),
        }),
      () => JSON.stringify(Array.from({ length: r.int(0, 3) }, () => ({ jsonrpc: '2.0', id: r.int(1, 9), method: 'ping' }))),
    ];
    const body = r.pick(bodies)();
    const headers: Record<string, string> = r.chance(0.9) ? { ...auth } : {};
    if (r.chance(0.1)) headers['content-type'] = r.pick(['text/plain', 'application/x-www-form-urlencoded', '']);
    if (r.chance(0.1)) headers.accept = r.pick(['text/html', 'application/json', 'text/event-stream', '*/*', '']);
    if (r.chance(0.1)) headers['mcp-protocol-version'] = r.pick(['2024-11-05', '2025-03-26', '2026-07-28', 'x', '']);
    if (r.chance(0.05)) headers['mcp-session-id'] = r.pick(['x', crypto.randomUUID()]);
    const method = r.chance(0.05) ? r.pick(['GET', 'DELETE', 'PUT', 'PATCH']) : 'POST';
    await raw(`malformed ${method}`, body, headers, method);
  };

  // Warm-up: every listed tool once with well-formed arguments, so later calls find ids.
  for (const caller of callers) for (const tool of caller.tools) await viaClient(caller, tool, argumentsFor(tool, true) as Record<string, Json>);
  while (sent < maxRequests && Date.now() < deadline) {
    const caller = r.pick(callers);
    const roll = r.next();
    // Now and then a tool the caller's tier does not list: its route's 403, as a tool result.
    const tool = r.chance(0.05) ? r.pick([...allTools.values()]) : r.pick(caller.tools);
    if (roll < 0.15) await malformed(caller);
    else {
      const args = argumentsFor(tool, r.chance(0.3));
      const object = args !== null && typeof args === 'object' && !Array.isArray(args);
      if (object && roll < 0.55) await viaClient(caller, tool, args as Record<string, Json>);
      else await viaRaw(caller, tool, args);
    }
  }
  for (const c of callers) await c.client.close();
  return {
    seed: opts.seed,
    requests: sent,
    tools: allTools.size,
    outcomes,
    failures: [...failures.values()],
    seconds: Math.round((Date.now() - started) / 100) / 10,
  };
}

/** A failure report a person can act on: the seed to rerun with, and each failing request. */
export function describeMcp(report: McpFuzzReport): string {
  const lines = [
    `mcp fuzz: ${report.requests} requests over ${report.tools} tools in ${report.seconds}s, seed ${report.seed} (rerun: FUZZ_SEED=${report.seed})`,
    `outcomes: ${JSON.stringify(report.outcomes)}`,
  ];
  for (const f of report.failures) lines.push(`- ${f.kind} ×${f.count}: ${f.what}`, `    request: ${f.request}`, `    answer: ${f.response}`);
  return lines.join('\n');
}
