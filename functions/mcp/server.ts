import { McpServer, ResourceNotFoundError, ResourceTemplate } from '@modelcontextprotocol/server';
import type { AuthContext } from '../../shared/platform/contract/context';
import { errorFields } from '../../shared/platform/contract/error-fields';
import { AppError, errorBody, validationError } from '../../shared/platform/contract/errors';
import { isConfined, mayUse } from '../../shared/platform/contract/scopes';
import type { Services } from '../../shared/platform/contract/services';
import { hasFeature } from '../../shared/platform/contract/tiers';
import { type BoundTool, RESOURCE_OPERATIONS } from './catalog';
import { MEMORY_READS, memoryBlock } from './data-block';
import { type Caller, callRoute, type Fetch, type RouteAnswer, unknownArguments, unsafeArgument } from './dispatch';

/** What one MCP request knows about its caller: passed through the SDK as `authInfo.extra`. */
export interface McpCaller extends Caller {
  auth: AuthContext;
  fetch: Fetch;
  experimentalEnabled: boolean;
  version: string;
  log: Services['log'];
}

type Json = Record<string, unknown>;

/**
 * An input schema the SDK advertises as is and does not validate: the route validates the
 * arguments, so a wrong one is answered with the same VALIDATION_ERROR (and its details) as over
 * HTTP, as a tool error the model can read.
 */
const advertised = (schema: Json) => ({
  '~standard': {
    version: 1 as const,
    vendor: 'engram',
    validate: (value: unknown) => ({ value: value && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {} }),
    jsonSchema: { input: () => schema, output: () => schema },
  },
});

/**
 * A tool's answer: the route's body as structured content, and the same as one line of text; the
 * memories a read answers are that line inside a block saying they are data (./data-block.ts).
 */
function toolResult(answer: RouteAnswer, operationId?: string) {
  const body = answer.body && typeof answer.body === 'object' && !Array.isArray(answer.body) ? (answer.body as Json) : { result: answer.body };
  const failed = answer.status >= 400;
  const text = failed
    ? `${body.code ?? answer.status}: ${body.message ?? 'request failed'} ${JSON.stringify(body)}`
    : operationId && MEMORY_READS.has(operationId)
      ? memoryBlock(body)
      : JSON.stringify(body);
  return { content: [{ type: 'text' as const, text }], structuredContent: body, ...(failed ? { isError: true } : {}) };
}

/** Refused before the route is called: the same error body the API answers, so a model reads one shape. */
const refusal = (message: string, requestId: string | undefined) =>
  toolResult({ status: 400, body: { error: 'VALIDATION_ERROR', code: 'VALIDATION_ERROR', status: 400, message, request_id: requestId ?? null } });

/**
 * The hints that differ from what MCP assumes of a tool left unannotated (a write, destructive,
 * not idempotent, open world); the title is the tool's own. Every byte of tools/list is read by
 * the model on every turn.
 */
const annotationsOf = (spec: BoundTool['spec']) => ({
  ...(spec.readOnly ? { readOnlyHint: true } : { destructiveHint: spec.destructive ?? false }),
  ...(spec.idempotent ? { idempotentHint: true } : {}),
  openWorldHint: false,
});

/**
 * Whether the caller's tier, its key's scopes and confinement (a restricted key) and this
 * deployment let it call the tool's route at all.
 */
export const mayCall = (tool: BoundTool, caller: Pick<McpCaller, 'auth' | 'experimentalEnabled'>) =>
  (!tool.feature || hasFeature(caller.auth.tier, tool.feature)) &&
  (!tool.experimental || caller.experimentalEnabled) &&
  mayUse(caller.auth, tool.scope) &&
  (tool.confinable || !isConfined(caller.auth.restriction));

type Listing = { name: string; title: string; description: string; inputSchema: Json & { type: 'object' }; annotations: ReturnType<typeof annotationsOf> };
const listings = new WeakMap<readonly BoundTool[], Map<string, Listing[]>>();

/** The tools/list answer of a tier and a key's scopes (and whether experimental routes are on), built once. */
function listFor(tools: readonly BoundTool[], caller: Pick<McpCaller, 'auth' | 'experimentalEnabled'>): Listing[] {
  const byKey = listings.get(tools) ?? new Map<string, Listing[]>();
  listings.set(tools, byKey);
  const key = `${caller.auth.tier}|${caller.experimentalEnabled}|${caller.auth.restriction?.scopes.join(',') ?? '*'}|${isConfined(caller.auth.restriction)}`;
  let listing = byKey.get(key);
  if (!listing) {
    listing = tools
      .filter((tool) => mayCall(tool, caller))
      .map(({ spec, inputSchema }) => ({
        name: spec.name,
        title: spec.title,
        description: spec.description,
        inputSchema: inputSchema as Json & { type: 'object' },
        annotations: annotationsOf(spec),
      }));
    byKey.set(key, listing);
  }
  return listing;
}

/**
 * The server of one MCP request: the tools the caller may call, and the two resources. `toolCall`
 * names the tool when the request is known to be a call of it: the server then has that tool alone,
 * since registering the others would be work for nothing on every call.
 */
export function serverFor(catalog: { tools: readonly BoundTool[]; routes: ReadonlyMap<string, BoundTool> }, caller: McpCaller, toolCall?: string): McpServer {
  const only = toolCall === undefined ? undefined : catalog.tools.find((t) => t.spec.name === toolCall);
  const server = new McpServer(
    { name: 'engram', version: caller.version },
    {
      instructions:
        'Long-term memory and change control for agents. Use `recall` before answering from memory and `remember` to keep what matters; submit side effects with `request_action` first.',
    },
  );
  // Every tool is callable, so one the tier or the key's scopes lack answers the route's own 403 as
  // a tool error; the list shows only those the caller may call.
  for (const tool of only ? [only] : catalog.tools) {
    const { spec } = tool;
    server.registerTool(
      spec.name,
      {
        title: spec.title,
        description: spec.description,
        inputSchema: advertised(tool.inputSchema),
        annotations: annotationsOf(spec),
      },
      async (input: unknown) => {
        const args = { ...tool.defaults, ...(input as Json) }; // an object: `advertised` validates it into one
        if (spec.confirm && args.confirm !== spec.confirm) {
          return refusal(`${spec.name} changes data for good: call it again with confirm: "${spec.confirm}" once the user confirmed`, caller.requestId);
        }
        const unknown = unknownArguments(tool, args);
        if (unknown.length) return refusal(`Unknown argument${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}`, caller.requestId);
        const bad = unsafeArgument(tool, args);
        if (bad) return toolResult({ status: 400, body: errorBody(validationError(bad.name, bad.problem), caller.requestId) });
        try {
          return toolResult(await callRoute(caller.fetch, tool, args, caller), spec.operationId);
        } catch (err) {
          // A failure of ours is still the one error body, never the SDK's bare message.
          caller.log.error('mcp tool failed', { request_id: caller.requestId, tool: spec.name, ...errorFields(err) });
          return toolResult({ status: 500, body: errorBody(new AppError('INTERNAL_ERROR', 'Internal error'), caller.requestId) });
        }
      },
    );
  }
  if (only) return server;
  server.server.removeRequestHandler('tools/list');
  server.server.setRequestHandler('tools/list', () => ({ tools: listFor(catalog.tools, caller) }));
  const read = async (uri: URL, operationId: (typeof RESOURCE_OPERATIONS)[number], args: Json) => {
    const route = catalog.routes.get(operationId)!;
    if (unsafeArgument(route, args)) throw new ResourceNotFoundError(uri.href);
    const answer = await callRoute(caller.fetch, route, args, caller);
    if (answer.status >= 400) throw new ResourceNotFoundError(uri.href);
    return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(answer.body) }] };
  };
  server.registerResource(
    'memory',
    new ResourceTemplate('engram://memories/{id}', { list: undefined }),
    { title: 'A memory', description: 'One memory by id, as GET /v1/memories/{id} answers it', mimeType: 'application/json' },
    (uri, { id }) => read(uri, 'memories.get', { id: String(id) }),
  );
  server.registerResource(
    'trace-certificate',
    new ResourceTemplate('engram://traces/{trace_id}/certificate', { list: undefined }),
    {
      title: 'A trace certificate',
      description: 'The signed certificate of a completed reasoning trace, verifiable offline with the public key',
      mimeType: 'application/json',
    },
    (uri, { trace_id }) => read(uri, 'traces.certificate', { trace_id: String(trace_id) }),
  );
  return server;
}
