/**
 * The MCP Inspector's schema-portability check (`inspector --cli --method tools/list --strict`,
 * core/json/schemaLint.ts of @modelcontextprotocol/inspector 2.12), rule for rule, so a test can
 * hold the live tools/list to it: a bare boolean where a schema is expected (error), a `type`
 * array (warning), a `$ref` outside the document (warning), a schema with no validation keyword
 * at all, such as `additionalProperties: {}` (warning).
 */

type Json = Record<string, unknown>;

export interface Finding {
  rule: 'boolean-schema' | 'type-union' | 'remote-ref' | 'untyped-schema';
  severity: 'error' | 'warning';
  tool: string;
  path: string;
}

/** Keywords whose value may be a bare boolean (`additionalProperties: false` is fine). */
const BOOLEAN_VALUED = new Set(['additionalProperties', 'unevaluatedProperties', 'additionalItems', 'unevaluatedItems']);
const SUBSCHEMA = [
  'items',
  'contains',
  'not',
  'propertyNames',
  'if',
  'then',
  'else',
  'additionalProperties',
  'unevaluatedProperties',
  'additionalItems',
  'unevaluatedItems',
  'contentSchema',
];
const SUBSCHEMA_ARRAYS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];
const SUBSCHEMA_MAPS = ['properties', 'patternProperties', 'dependentSchemas', 'dependencies', '$defs', 'definitions'];
/** A schema with none of these (and no `if` with `then` or `else`) accepts any value. */
const CONSTRAINING = new Set([
  ...['type', 'enum', 'const', 'multipleOf', 'maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum', 'maxLength', 'minLength', 'pattern'],
  ...['format', 'contentMediaType', 'contentEncoding', 'contentSchema', 'maxItems', 'minItems', 'uniqueItems', 'maxContains', 'minContains'],
  ...['maxProperties', 'minProperties', 'required', 'dependentRequired', 'allOf', 'anyOf', 'oneOf', 'not', 'items', 'prefixItems', 'contains'],
  ...['additionalItems', 'unevaluatedItems', 'properties', 'patternProperties', 'additionalProperties', 'unevaluatedProperties', 'propertyNames'],
  ...['dependentSchemas', 'dependencies', '$ref', '$dynamicRef', '$recursiveRef'],
]);
const TYPES = new Set(['null', 'boolean', 'object', 'array', 'number', 'string', 'integer']);
const MAX_DEPTH = 64;

const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function forEachSubschema(node: Json, path: string, visit: (child: unknown, path: string, keyword: string) => void) {
  for (const key of SUBSCHEMA_MAPS) {
    const map = node[key];
    if (isRecord(map)) for (const [name, sub] of Object.entries(map)) visit(sub, `${path}.${key}.${name}`, key);
  }
  for (const key of SUBSCHEMA_ARRAYS) {
    const list = node[key];
    if (Array.isArray(list)) list.forEach((sub, i) => visit(sub, `${path}.${key}[${i}]`, key));
  }
  for (const key of SUBSCHEMA) {
    if (!(key in node)) continue;
    const value = node[key];
    if (key === 'items' && Array.isArray(value)) value.forEach((sub, i) => visit(sub, `${path}.items[${i}]`, key));
    else visit(value, `${path}.${key}`, key);
  }
}

const declaresId = (node: unknown, depth = 0): boolean => {
  if (depth > MAX_DEPTH || !isRecord(node)) return false;
  if (typeof node.$id === 'string' && node.$id !== '') return true;
  let found = false;
  forEachSubschema(node, '', (child) => {
    found ||= declaresId(child, depth + 1);
  });
  return found;
};

/** Every finding of the Inspector's strict check in one tool's input and output schemas. */
export function lintTool(tool: { name: string; inputSchema?: unknown; outputSchema?: unknown }): Finding[] {
  const findings: Finding[] = [];
  for (const kind of ['inputSchema', 'outputSchema'] as const) {
    const root = tool[kind];
    if (root === undefined) continue;
    const embeddedIds = declaresId(root);
    const walk = (node: unknown, path: string, keyword: string | undefined, depth: number) => {
      if (depth > MAX_DEPTH) return;
      if (typeof node === 'boolean') {
        if (keyword === undefined || !BOOLEAN_VALUED.has(keyword)) findings.push({ rule: 'boolean-schema', severity: 'error', tool: tool.name, path });
        return;
      }
      if (!isRecord(node)) return;
      const { type, $ref } = node;
      if (Array.isArray(type) && type.length > 0 && type.every((t) => typeof t === 'string' && TYPES.has(t)) && new Set(type).size === type.length) {
        findings.push({ rule: 'type-union', severity: 'warning', tool: tool.name, path });
      }
      if (typeof $ref === 'string' && $ref !== '' && !$ref.startsWith('#') && !embeddedIds) {
        findings.push({ rule: 'remote-ref', severity: 'warning', tool: tool.name, path });
      }
      const constrains = Object.keys(node).some((k) => CONSTRAINING.has(k)) || ('if' in node && ('then' in node || 'else' in node));
      if (!constrains && keyword !== 'not') findings.push({ rule: 'untyped-schema', severity: 'warning', tool: tool.name, path });
      forEachSubschema(node, path, (child, childPath, childKeyword) => walk(child, childPath, childKeyword, depth + 1));
    };
    walk(root, kind, undefined, 0);
  }
  return findings;
}
