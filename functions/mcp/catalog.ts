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
  /** What the tool sends for an argument the model left out (ToolSpec.defaults). */
  defaults: Readonly<Record<string, unknown>>;
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
    properties[p.name] = asArgument({ ...(p.schema ?? {}), ...(p.description ? { description: p.description } : {}) });
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
  for (const [path, description] of Object.entries(spec.describe ?? {})) {
    // `name` or `name.items`: the argument, or the schema of its items.
    const [name, ...within] = path.split('.');
    const target = within.reduce<Json | undefined>((schema, key) => schema?.[key] as Json | undefined, properties[name]);
    if (!target || typeof target !== 'object') throw new Error(`MCP tool ${spec.name}: describes ${path}, which the route does not take`);
    const described = { ...target, description };
    properties[name] = within.length ? setAt(properties[name], within, described) : described;
  }
  for (const [name, value] of Object.entries(spec.defaults ?? {})) {
    if (!properties[name]) throw new Error(`MCP tool ${spec.name}: a default for ${name}, which the route does not take`);
    properties[name] = { ...properties[name], default: value };
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
    inputSchema: portable(rewriteRefs(Object.keys(defs).length ? { ...schema, $defs: defs } : schema)) as Json,
    defaults: spec.defaults ?? {},
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

/** A copy of `schema` with the value at `path` replaced. */
const setAt = (schema: Json, [key, ...rest]: string[], value: Json): Json => ({
  ...schema,
  [key]: rest.length ? setAt(schema[key] as Json, rest, value) : value,
});

const FLAG_VALUES = new Set(['true', 'false', '1', '0']);

/**
 * A path or query parameter as a model should send it: a list as an array and a flag as a
 * boolean, which the request then writes as the API takes them (comma-separated; `true`/`false`,
 * dispatch.ts). A query string has no null, so a nullable parameter is its plain type.
 */
function asArgument(schema: Json): Json {
  const { type, enum: values, description } = schema;
  if (Array.isArray(type)) {
    const kinds = type.filter((t) => t !== 'null');
    if (kinds.length === 1) return asArgument({ ...schema, type: kinds[0] });
  }
  if (type === 'string' && Array.isArray(values) && values.includes('true') && values.includes('false') && values.every((v) => FLAG_VALUES.has(v as string))) {
    const { enum: _, default: fallback, ...rest } = schema;
    if (typeof description === 'string') rest.description = sentence(description.replace(/^`true` or `1`:\s*/, ''));
    return { ...rest, type: 'boolean', ...(fallback === undefined ? {} : { default: fallback === true || fallback === 'true' || fallback === '1' }) };
  }
  // A list parameter says so: the API documents each as "Comma-separated ...".
  if (type === 'string' && typeof description === 'string' && /^comma-separated\b/i.test(description)) {
    const { maxLength: _, description: __, example: ___, ...rest } = schema;
    const said = description.replace(/^comma-separated\b[,;:]?\s*/i, '');
    return { type: 'array', items: rest, ...(said ? { description: sentence(said) } : {}) };
  }
  return schema;
}

const sentence = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** Keywords whose value is one schema, a list of schemas, or a map of named schemas. */
const SCHEMA_KEYWORDS = ['items', 'additionalProperties', 'not', 'contains', 'propertyNames', 'if', 'then', 'else'];
const SCHEMA_LIST_KEYWORDS = ['anyOf', 'allOf', 'oneOf', 'prefixItems'];
const SCHEMA_MAP_KEYWORDS = ['properties', 'patternProperties', '$defs'];
/** What only one `type` of a `type` union constrains, so it moves into that type's branch. */
const KEYWORDS_OF_TYPE: Record<string, readonly string[]> = {
  string: ['minLength', 'maxLength', 'pattern', 'format'],
  number: ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'],
  integer: ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'],
  array: ['items', 'minItems', 'maxItems', 'uniqueItems'],
  object: ['properties', 'required', 'additionalProperties', 'minProperties', 'maxProperties'],
};

/**
 * A schema every MCP host takes (the Inspector's `--strict` portability check, test/mcp-schema-lint.ts):
 * a `type` union becomes `anyOf` branches of one type each, a free-form object says
 * `additionalProperties: true` rather than `{}`, and `example` goes (a model has the description;
 * the examples stay in the OpenAPI document).
 */
function portable(schema: unknown): unknown {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return schema;
  const out: Json = {};
  for (const [key, value] of Object.entries(schema as Json)) {
    if (key === 'example') continue;
    if (SCHEMA_KEYWORDS.includes(key)) out[key] = isAnything(value) && key === 'additionalProperties' ? true : portable(value);
    else if (SCHEMA_LIST_KEYWORDS.includes(key) && Array.isArray(value)) out[key] = value.map(portable);
    else if (SCHEMA_MAP_KEYWORDS.includes(key) && value && typeof value === 'object') {
      out[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, portable(sub)]));
    } else out[key] = value;
  }
  const { type } = out;
  if (!Array.isArray(type)) return out;
  const branches = type.map((kind: string) => {
    const branch: Json = { type: kind };
    for (const keyword of KEYWORDS_OF_TYPE[kind] ?? []) if (keyword in out) branch[keyword] = out[keyword];
    return branch;
  });
  const moved = new Set(['type', ...type.flatMap((kind: string) => KEYWORDS_OF_TYPE[kind] ?? [])]);
  return { anyOf: branches, ...Object.fromEntries(Object.entries(out).filter(([key]) => !moved.has(key))) };
}

/** `{}` (or one with only words in it): a schema that accepts any value. */
const isAnything = (schema: unknown) =>
  Boolean(schema) && typeof schema === 'object' && !Array.isArray(schema) && Object.keys(schema as Json).every((k) => k === 'description' || k === 'title');
