import {
  type AuthInfo,
  createMcpHandler,
  isLegacyRequest,
  type McpServer,
  specTypeSchemas,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server';
import type { Context, Hono } from 'hono';
import { authenticate, countUncounted } from '../../shared/platform/http/auth';
import { type AppEnv, VIA_ENV } from '../../shared/platform/contract/context';
import { AppError, errorBody } from '../../shared/platform/contract/errors';
import { MAX_BODY_BYTES, MCP_PATH, publicBase, RESOURCE_METADATA_PATH } from '../../shared/platform/http/app';
import { type Services, VERSION } from '../../shared/platform/contract/services';
import { errorFields } from '../../shared/platform/contract/error-fields';
import { LIMIT_HEADER_NAMES, type LimitState, limitHeaders, setLimitHeaders } from '../../shared/platform/limits/rate-limit-headers';
import { type BoundTool, bindTools } from './catalog';
import { originAllowed } from './origin';
import { type McpCaller, serverFor } from './server';

/**
 * `/mcp`: the Model Context Protocol over streamable HTTP, stateless (a server per request), on
 * the same API keys (docs/architecture.md#mcp). Each tool call is a request the app makes to
 * itself with the caller's key, so it passes the route's own validation, rate limit, quota, tier
 * gate, idempotency and audit, and its audit entries say `via: "mcp"`.
 */
export function mountMcp(app: Hono<AppEnv>, documentOf: (c: Context<AppEnv>) => unknown) {
  let catalog: { tools: BoundTool[]; routes: Map<string, BoundTool> } | undefined;
  let log: Services['log'] | undefined;
  const handler = createMcpHandler(({ authInfo }) => serverFor(catalog!, authInfo!.extra!.caller as McpCaller), {
    maxRequestBodySize: MAX_BODY_BYTES,
    // Rejected or failed exchanges: the client has its JSON-RPC error; operators see why.
    onerror: (err) => log?.warn('mcp request failed', errorFields(err)),
  });

  // RFC 9728: where a client that got our 401 learns how to authenticate: an API key, or an
  // OAuth access token from this server acting as its own authorization server (functions/oauth).
  const metadata = (c: Context<AppEnv>) => {
    const base = publicBase(c);
    if (!base) throw new AppError('NOT_FOUND', 'No protected-resource metadata: set PUBLIC_URL to the URL clients reach this server at');
    return c.json({
      resource: `${base}${MCP_PATH}`,
      resource_name: 'engram',
      authorization_servers: [base],
      bearer_methods_supported: ['header'],
      resource_documentation: `${base}/docs`,
    });
  };
  app.get(RESOURCE_METADATA_PATH, metadata);
  app.get(`${RESOURCE_METADATA_PATH}${MCP_PATH}`, metadata);

  app.all(MCP_PATH, async (c) => {
    const services = c.get('services');
    log = services.log;
    const requestId = c.get('requestId');
    if (!originAllowed(c.req.header('origin'), c.req.url, services.config)) {
      return c.json(errorBody(new AppError('FORBIDDEN', 'This Origin may not call /mcp (set MCP_ALLOWED_ORIGINS to allow it)'), requestId), 403);
    }
    let auth: Awaited<ReturnType<typeof authenticate>>;
    try {
      auth = await authenticate(services, c.req.header('authorization'));
    } catch (err) {
      if (!(err instanceof AppError) || err.status !== 401) throw err;
      // RFC 6750: a token that was presented but is no good says so (invalid_token), so a client
      // refreshes or signs in again; no token at all is only the challenge.
      const base = publicBase(c);
      const presented = Boolean(c.req.header('authorization'));
      const params = [...(presented ? ['error="invalid_token"'] : []), ...(base ? [`resource_metadata="${base}${RESOURCE_METADATA_PATH}"`] : [])];
      c.header('WWW-Authenticate', params.length ? `Bearer ${params.join(', ')}` : 'Bearer');
      return c.json(errorBody(err, requestId), 401);
    }
    catalog ??= bindTools(documentOf(c) as Record<string, unknown>);
    const executionCtx = executionCtxOf(c);
    const env = { ...(c.env as object), [VIA_ENV]: 'mcp' };
    // The RateLimit headers of the answer: the last tool call's route's (the key's window and
    // quota), else the MCP window this request counted against.
    let routeLimits: Headers | undefined;
    let window: LimitState | undefined;
    const caller: McpCaller = {
      auth,
      authorization: c.req.header('authorization')!,
      origin: new URL(c.req.url).origin,
      // The tool call's request answers with the MCP request's id, so one id follows it through the logs.
      requestId,
      fetch: async (request) => {
        const res = await app.fetch(request, env, executionCtx);
        if (res.headers.has('RateLimit')) routeLimits = res.headers;
        return res;
      },
      experimentalEnabled: services.config.SVC_ENABLE_EXPERIMENTAL,
      version: VERSION,
      log: services.log,
    };
    const authInfo = { token: '', clientId: auth.keyId, scopes: [], extra: { caller } };
    const uncounted = async (body: unknown) => {
      const messages = messagesUncounted(body);
      if (!messages) return;
      const counted = await countUncounted(services, auth, 'mcp', messages);
      window = counted.window;
      if (counted.refusal) {
        setLimitHeaders(c, window);
        throw counted.refusal;
      }
    };
    const answer = async (res: Response) => {
      // A tools/call refused before it reached a route (an unknown tool, a missing confirmation)
      // counted nothing yet: it counts against the MCP window now, and says where that stands.
      if (!routeLimits && !window) window = (await countUncounted(services, auth, 'mcp')).window;
      const out = new Response(res.body, res);
      const pairs = routeLimits ? LIMIT_HEADER_NAMES.map((name) => [name, routeLimits!.get(name)] as const) : limitHeaders(window!);
      for (const [name, value] of pairs) if (value !== null) out.headers.set(name, value);
      return out;
    };
    if (c.req.method !== 'POST') {
      await uncounted(undefined);
      return answer(await handler.fetch(c.req.raw, { authInfo }));
    }
    // The app's body checks have read the body already: the SDK gets it parsed.
    let parsedBody: unknown;
    try {
      parsedBody = await c.req.json();
    } catch {
      await uncounted(undefined);
      return answer(c.json({ jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: the body is not JSON' }, id: null }, 400));
    }
    await uncounted(parsedBody);
    const invalid = invalidParams(parsedBody);
    if (invalid) return answer(c.json({ jsonrpc: '2.0', error: { code: -32602, message: `Invalid params: ${invalid.problem}` }, id: invalid.id }));
    if (await isLegacyRequest(c.req.raw, parsedBody, { maxRequestBodySize: MAX_BODY_BYTES })) {
      return answer(await serveLegacy(serverFor(catalog, caller, toolCalled(parsedBody)), c.req.raw, { authInfo, parsedBody }));
    }
    return answer(await handler.fetch(c.req.raw, { authInfo, parsedBody }));
  });
}

/**
 * A 2025-era POST, stateless, answered as one JSON body: the SDK's own fallback answers it as an
 * SSE stream, which a tool call (one result, no progress) does not need and which costs both ends
 * a stream to set up, frame and parse.
 */
async function serveLegacy(server: McpServer, request: Request, options: { authInfo: AuthInfo; parsedBody: unknown }) {
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  try {
    return await transport.handleRequest(request, options);
  } finally {
    await transport.close().catch(() => undefined);
    await server.close().catch(() => undefined);
  }
}

/**
 * Whether the message is one request the route it calls counts (a tools/call or a resources/read):
 * every other message (initialize, tools/list, ping, notifications) passes the key's MCP rate
 * window instead, so no key can make unbounded work that counts nothing.
 */
function countedByRoute(message: unknown): boolean {
  if (!message || typeof message !== 'object' || Array.isArray(message)) return false;
  const { method } = message as { method?: unknown };
  return method === 'tools/call' || method === 'resources/read';
}

/**
 * How many messages of the body the MCP window counts: each message of a batch that no route
 * counts (a batch counts at least once), a single message unless its route counts it.
 */
function messagesUncounted(body: unknown): number {
  if (Array.isArray(body)) return Math.max(1, body.filter((message) => !countedByRoute(message)).length);
  return countedByRoute(body) ? 0 : 1;
}

/** The tool a single tools/call request names. */
function toolCalled(body: unknown): string | undefined {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const { method, params } = body as { method?: unknown; params?: { name?: unknown } };
  return method === 'tools/call' && typeof params?.name === 'string' ? params.name : undefined;
}

/**
 * A request of a method MCP defines whose params do not fit it (initialize without a
 * protocolVersion, resources/read without a uri, a cursor that is not a string): what is wrong,
 * answered as invalid params (-32602). The SDK would answer these as an internal error (-32603).
 */
function invalidParams(body: unknown): { id: string | number; problem: string } | null {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return null;
  const { id, method, params } = body as Record<string, unknown>;
  // tools/call, the hot path, is checked by the SDK itself (-32602); the rest are rare.
  if (typeof method !== 'string' || method === 'tools/call' || (typeof id !== 'string' && typeof id !== 'number')) return null;
  const outcome = specTypeSchemas.ClientRequest['~standard'].validate({ method, params });
  if (outcome instanceof Promise || !outcome.issues) return null;
  // One branch per request type: the one whose issues are not about `method` is this method's.
  const branches = (outcome.issues[0] as { errors?: { path?: PropertyKey[]; message: string }[][] }).errors ?? [];
  const own = branches.find((issues) => issues.every((i) => i.path?.[0] !== 'method'));
  return own ? { id, problem: own.map((i) => `${(i.path ?? []).map(String).join('.')}: ${i.message}`).join('; ') } : null;
}

/** Workers' execution context (waitUntil), which Node's adapter does not provide. */
function executionCtxOf(c: Context<AppEnv>) {
  try {
    return c.executionCtx;
  } catch {
    return undefined;
  }
}
