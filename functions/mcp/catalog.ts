import type { Feature } from '../../shared/platform/contract/tiers';
import { TOOLS, type ToolSpec } from './tools';

type Json = Record<string, unknown>;

/** One tool bound to its route: where each argument goes, and the input schema a model sees. */
export interface BoundTool {
  spec: ToolSpec;
  method: string;
  /** The OpenAPI path, `{name}` for each path parameter. */
  path: string;
  pathKeys: readonly string[];
  queryKeys: readonly string[];
  /** Whether the route takes a JSON body; its fields are the arguments that are neither path nor query. */
  hasBody: boolean;
  inputSchema: Json;
  feature?: Feature;
  experimental: boolean;
  /** Whether the route honours a key confined to an agent or to spaces (`x-confinable`). */
  confinable: boolean;
  /** The scope a restricted key needs (`x-required-scope`). */
  scope: string;
}

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  description?: string;
  schema?: Json;
}

/**
 * Binds every tool to its operation in the OpenAPI document the app serves, so a tool's input
 * schema is the route's own (built from the same zod schemas) and the two cannot drift. Component
 * references become `$defs` of the tool's schema. Throws on a tool whose operation does not exist.
 */
export function bindTools(document: Json): { tools: BoundTool[]; routes: Map<string, BoundTool> } {
  const operations = new Map<string, { method: string; path: string; op: Json }>();
  for (const [path, item] of Object.entries((document.paths ?? {}) as Record<string, Record<string, Json>>)) {
    for (const [method, op] of Object.entries(item)) {
      if (typeof op?.operationId === 'string') operations.set(op.operationId, { method, path, op });
    }
  }
  const components = ((document.components as Json | undefined)?.schemas ?? {}) as Record<string, Json>;
  const bindSpec = (spec: ToolSpec) => {
    const found = operations.get(spec.operationId);
    if (!found) throw new Error(`MCP tool ${spec.name}: no operation ${spec.operationId}`);
    return bind(spec, found.method, found.path, found.op, components);
  };
  const tools = TOOLS.map(bindSpec);
  const routes = new Map(tools.map((t) => [t.spec.operationId, t]));
  for (const operationId of RESOURCE_OPERATIONS) {
    if (!routes.has(operationId)) routes.set(operationId, bindSpec({ name: operationId, operationId, title: operationId, description: '', readOnly: true }));
  }
  return { tools, routes };
}

/** The routes the resources read (`engram://memories/{id}`, `engram://traces/{trace_id}/certificate`). */
export const RESOURCE_OPERATIONS = ['memories.get', 'traces.certificate'] as const;

function bind(spec: ToolSpec, method: string, path: string, op: Json, components: Record<string, Json>): BoundTool {
  const properties: Record<string, Json> = {};
  const required: string[] = [];
  const parameters = ((op.parameters ?? []) as Parameter[]).filter((p) => p.in === 'path' || p.in === 'query');
  for (const p of parameters) {
    properties[p.name] = { ...(p.schema ?? {}), ...(p.description ? { description: p.description } : {}) };
    if (p.required) required.push(p.name);
  }
  const bodySchema = ((op.requestBody as Json | undefined)?.content as Record<string, Json> | undefined)?.['application/json']?.schema as Json | undefined;
  if (bodySchema) {
    const body = resolve(bodySchema, components);
    for (const [name, schema] of Object.entries((body.properties ?? {}) as Record<string, Json>)) {
      if (name in properties) throw new Error(`MCP tool ${spec.name}: ${name} is both a parameter and a body field`);
      properties[name] = schema;
    }
    const bodyRequired = (op.requestBody as Json).required !== false;
    if (bodyRequired) required.push(...((body.required ?? []) as string[]));
  }
  if (spec.confirm) {
    properties.confirm = { type: 'string', const: spec.confirm, description: `Must be exactly "${spec.confirm}": the user confirmed this` };
    required.push('confirm');
  }
  const schema: Json = { type: 'object', properties, ...(required.length ? { required } : {}), additionalProperties: false };
  const defs = referencedComponents(schema, components);
  return {
    spec,
    method: method.toUpperCase(),
    path,
    pathKeys: parameters.filter((p) => p.in === 'path').map((p) => p.name),
    queryKeys: parameters.filter((p) => p.in === 'query').map((p) => p.name),
    hasBody: Boolean(bodySchema),
    inputSchema: rewriteRefs(Object.keys(defs).length ? { ...schema, $defs: defs } : schema) as Json,
    feature: op['x-required-feature'] as Feature | undefined,
    experimental: op['x-experimental'] === true,
    confinable: op['x-confinable'] === true,
    scope: op['x-required-scope'] as string,
  };
}

const refName = (ref: unknown) => (typeof ref === 'string' && ref.startsWith('#/components/schemas/') ? ref.slice('#/components/schemas/'.length) : null);

/** The body schema itself when it is a reference, so its fields can become top-level arguments. */
function resolve(schema: Json, components: Record<string, Json>): Json {
  const name = refName(schema.$ref);
  return name ? resolve(components[name] ?? {}, components) : schema;
}

/** Every component the schema reaches, transitively, by name. */
function referencedComponents(schema: unknown, components: Record<string, Json>, found: Record<string, Json> = {}): Record<string, Json> {
  if (Array.isArray(schema)) {
    for (const item of schema) referencedComponents(item, components, found);
  } else if (schema && typeof schema === 'object') {
    for (const [key, value] of Object.entries(schema)) {
      const name = key === '$ref' ? refName(value) : null;
      if (name && !found[name] && components[name]) {
        found[name] = components[name];
        referencedComponents(components[name], components, found);
      } else referencedComponents(value, components, found);
    }
  }
  return found;
}

function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (!value || typeof value !== 'object') return value;
  const out: Json = {};
  for (const [key, v] of Object.entries(value)) {
    const name = key === '$ref' ? refName(v) : null;
    out[key] = name ? `#/$defs/${name}` : rewriteRefs(v);
  }
  return out;
}
