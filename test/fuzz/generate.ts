/**
 * Request generation for the OpenAPI-driven fuzz test: a seeded PRNG, values that fit a schema of
 * the app's own `/openapi.json`, and hostile values that do not (wrong types, missing and null
 * fields, huge and empty strings, NUL and lone surrogates, deep nesting, long arrays, out-of-range
 * numbers and dates, bad ids). Nothing here knows a route: every operation of the document is fair game.
 */

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type Schema = Record<string, any>;

/** mulberry32: a small, fast, seedable PRNG (the sequence depends only on the seed). */
export class Rng {
  private s: number;
  constructor(readonly seed: number) {
    this.s = seed >>> 0;
  }
  next(): number {
    this.s = (this.s + 0x6d2b79f5) >>> 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }
  word(n = this.int(1, 10)): string {
    const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
    let s = '';
    for (let i = 0; i < n; i++) s += alphabet[Math.floor(this.next() * alphabet.length)];
    return s;
  }
}

function nest(depth: number, leaf: Json, asObject: boolean): Json {
  let v: Json = leaf;
  for (let i = 0; i < depth; i++) v = asObject ? { a: v } : [v];
  return v;
}

/** Strings no validator should let reach a 5xx. */
export const hostileStrings = (r: Rng): string[] => [
  '',
  ' ',
  'a\u0000b',
  '\u0000',
  '\ud800',
  'x\udfffy',
  '\udc00\ud800',
  '💥🧨',
  '\u202e\u200b\ufeff',
  'a'.repeat(r.pick([65, 101, 129, 255, 2001, 4001, 16001, 70_000])),
  '%00',
  '%',
  '\\',
  "'; DROP TABLE memories; --",
  '${{7*7}}%s%n',
  '\r\n\t',
  '../../etc/passwd',
  '=cmd|calc',
  'urn:uuid:not-a-uuid',
  'urn:uuid:01935f6e-8a2b-7c3d-9e4f-5a6b7c8d9e0f',
  '00000000-0000-0000-0000-000000000000',
  'ffffffff-ffff-ffff-ffff-ffffffffffff',
  crypto.randomUUID(),
  `urn:uuid:${crypto.randomUUID()}`,
  'ten_0000000000000000000000',
  'comp_0000000000000000000000',
  'sk_aaaaaaaaaaa',
  'team:x',
  '0000-01-01T00:00:00Z',
  '0000-00-00',
  '-000001-01-01T00:00:00Z',
  '+275760-09-13T00:00:00Z',
  '9999-12-31T23:59:59.999Z',
  '10000-01-01T00:00:00Z',
  '0001-01-01',
  '1969-12-31T23:59:59Z',
  '2026-02-30',
  '2026-13-01',
  '2026-01-01T24:00:00Z',
  '2026-01-01T00:00:00+99:99',
  '999999 days ago',
  '0 minutes ago',
  '1e400',
  '-1',
  '9007199254740993',
  'NaN',
  'null',
  'true',
  '[]',
  '{}',
  'ada@',
  '@example.com',
  `${'a'.repeat(64)}@${'b'.repeat(190)}.com`,
  'x@mailinator.com',
  'a\u0000@example.com',
];

export const hostileNumbers: number[] = [0, -1, 1.5, -0.5, 1e308, -1e308, 2 ** 53 + 1, -(2 ** 53) - 1, 2 ** 31, 2 ** 63, 1e-320, 10_000_001, 99999999999];

/** A value of any shape, mostly not what the schema asks for. */
export function hostileValue(r: Rng): Json {
  switch (r.int(0, 9)) {
    case 0:
    case 1:
    case 2:
      return r.pick(hostileStrings(r));
    case 3:
      return r.pick(hostileNumbers);
    case 4:
      return r.pick([null, true, false, [], {}]);
    case 5:
      return nest(r.pick([2, 64, 500, 1000]), r.pick(['x', 1, null]), r.chance(0.5));
    case 6:
      return Array.from({ length: r.pick([51, 101, 1001, 10_000]) }, (_, i) => (r.chance(0.5) ? `t${i}` : i));
    case 7:
      return { [r.pick(['__proto__', 'constructor', 'toString', '', '\u0000'])]: r.pick(['x', 1, {}]) };
    case 8:
      return [r.pick(hostileStrings(r)), null, 1];
    default:
      return r.pick(hostileStrings(r)).repeat(r.int(1, 3));
  }
}

export class SchemaWalker {
  constructor(private readonly components: Record<string, Schema>) {}

  resolve(s: Schema | undefined): Schema {
    let schema = s ?? {};
    for (let i = 0; i < 10 && schema.$ref; i++) schema = this.components[String(schema.$ref).split('/').pop()!] ?? {};
    return schema;
  }

  /** A value that fits the schema, biased to its examples, defaults and bounds. */
  valid(r: Rng, s: Schema | undefined, name = '', depth = 0, ids: (name: string) => string | undefined = () => undefined): Json {
    const schema = this.resolve(s);
    const alts = schema.anyOf ?? schema.oneOf;
    if (alts) return this.valid(r, r.pick(alts), name, depth + 1, ids);
    if (schema.allOf) return Object.assign({}, ...schema.allOf.map((x: Schema) => this.valid(r, x, name, depth + 1, ids)));
    if (schema.const !== undefined) return schema.const;
    if (schema.enum) return r.pick(schema.enum);
    let type = schema.type;
    if (Array.isArray(type)) type = r.pick(type.filter((t: string) => t !== 'null').length && r.chance(0.9) ? type.filter((t: string) => t !== 'null') : type);
    if (!type) type = schema.properties ? 'object' : schema.items ? 'array' : 'string';
    switch (type) {
      case 'null':
        return null;
      case 'boolean':
        return r.chance(0.5);
      case 'integer':
      case 'number': {
        const min = schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : 0);
        const max = schema.maximum ?? (schema.exclusiveMaximum !== undefined ? schema.exclusiveMaximum - 1 : min + 100);
        if (schema.default !== undefined && r.chance(0.2)) return schema.default;
        const v = min + r.next() * (Math.min(max, min + 1000) - min);
        return type === 'integer' ? Math.round(v) : v;
      }
      case 'array': {
        const n = r.int(schema.minItems ?? 0, Math.min(schema.maxItems ?? 3, 3));
        if (schema.example && Array.isArray(schema.example) && r.chance(0.5)) return schema.example;
        return Array.from({ length: n }, () => this.valid(r, schema.items, name, depth + 1, ids));
      }
      case 'object': {
        const out: Record<string, Json> = {};
        const required = new Set<string>(schema.required ?? []);
        for (const [k, sub] of Object.entries<Schema>(schema.properties ?? {})) {
          if (required.has(k) || r.chance(0.5)) out[k] = this.valid(r, sub, k, depth + 1, ids);
        }
        return out;
      }
      default:
        return this.string(r, schema, name, ids);
    }
  }

  private string(r: Rng, schema: Schema, name: string, ids: (name: string) => string | undefined): string {
    const known = ids(name);
    if (known && r.chance(0.7)) return known;
    if (schema.format === 'email' || /email|^to$/.test(name)) return `fz-${r.word(10)}@example.com`;
    if (schema.example !== undefined && r.chance(0.6)) return String(schema.example);
    if (schema.format === 'date-time' || /^(since|until|at|from|to|target|rollback_from|rollback_to)$/.test(name)) {
      return r.pick(['1 hour ago', '2 days ago', new Date(Date.now() - r.int(0, 1e9)).toISOString()]);
    }
    const min = schema.minLength ?? 1;
    const max = Math.min(schema.maxLength ?? 24, 24);
    return r.word(r.int(min, Math.max(min, max)));
  }
}

/** Every path into a JSON value (objects and arrays), the root included as []. */
export function pathsOf(v: Json, prefix: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  out.push(prefix);
  if (out.length > 200) return out;
  if (Array.isArray(v)) v.forEach((x, i) => pathsOf(x, [...prefix, i], out));
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) pathsOf(x, [...prefix, k], out);
  return out;
}

/** One mutation of a valid body: a field replaced, removed, set to null, or an unknown one added. */
export function mutateBody(r: Rng, body: Json): Json {
  const paths = pathsOf(body);
  const path = r.pick(paths);
  if (path.length === 0) return r.chance(0.5) ? hostileValue(r) : body;
  const clone = structuredClone(body) as any;
  let parent = clone;
  for (const key of path.slice(0, -1)) parent = parent[key];
  const last = path[path.length - 1];
  const roll = r.int(0, 9);
  if (roll === 0 && !Array.isArray(parent)) delete parent[last];
  else if (roll === 1) parent[last] = null;
  else if (roll === 2 && parent && typeof parent === 'object' && !Array.isArray(parent))
    parent[r.pick(['extra', 'tenant_id', '__proto__', 'id'])] = hostileValue(r);
  else parent[last] = hostileValue(r);
  return clone;
}

/** Percent-encoding that never throws: lone surrogates and raw escapes pass through as they are. */
export function encodeParam(r: Rng, value: string): string {
  if (r.chance(0.05)) return value.replace(/[\s#&?/]/g, encodeURIComponent);
  try {
    return encodeURIComponent(value);
  } catch {
    return value.replace(/[\ud800-\udfff]/g, '%ED%A0%80').replace(/[^\w%-]/g, (ch) => {
      try {
        return encodeURIComponent(ch);
      } catch {
        return '';
      }
    });
  }
}

/** A hostile query or path parameter, already percent-encoded (raw escapes such as %00 included). */
export function hostileParam(r: Rng): string {
  if (r.chance(0.25)) return r.pick(['%00', 'a%00b', '%ED%A0%80', '%zz', '%', '%C0%80', '%FF%FE', '..%2F..%2F', '%E2%80%AE']);
  const v = hostileValue(r);
  return encodeParam(r, typeof v === 'string' ? v : typeof v === 'number' ? String(v) : JSON.stringify(v).slice(0, 5000));
}
