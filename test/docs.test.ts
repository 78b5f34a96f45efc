import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, createEngine, freshIp, type TestEngine } from './harness';

/**
 * The reference UI at /docs and the examples it shows. Scalar builds each example from the
 * OpenAPI document: `exampleFor` below follows its algorithm (@scalar/api-reference 1.46, the
 * `getExampleFromSchema` of its standalone bundle): examples[0], example, default, const, enum[0],
 * then objects and arrays member by member, then a placeholder by type: for a string with no known
 * format that is "" in a request body and the word "string" in a response.
 */
let engine: TestEngine;
let doc: any;
beforeAll(async () => {
  engine = await createEngine({ env: { SVC_ENABLE_EXPERIMENTAL: '1' } });
  doc = (await engine.request('GET', '/openapi.json')).body;
});
afterAll(() => engine.close());

type Schema = Record<string, any>;
const FORMAT_EXAMPLES: Record<string, string> = {
  'date-time': new Date().toISOString(),
  date: new Date().toISOString().slice(0, 10),
  email: 'hello@example.com',
  uri: 'https://example.com',
  uuid: '123e4567-e89b-12d3-a456-426614174000',
  hostname: 'example.com',
  ipv4: '127.0.0.1',
};

function resolve(s: Schema | undefined): Schema | undefined {
  let out = s;
  while (out?.$ref) out = doc.components.schemas[String(out.$ref).split('/').pop()!];
  return out;
}

function exampleFor(schema: Schema | undefined, placeholder: string, seen = new Set<Schema>()): unknown {
  const s = resolve(schema);
  if (!s || seen.has(s)) return undefined;
  const inner = new Set(seen).add(s);
  if (Array.isArray(s.examples) && s.examples.length) return s.examples[0];
  if (s.example !== undefined) return s.example;
  if (s.default !== undefined) return s.default;
  if (s.const !== undefined) return s.const;
  if (Array.isArray(s.enum) && s.enum.length) return s.enum[0];
  if (s.properties || s.type === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries<Schema>(s.properties ?? {})) {
      const value = exampleFor(v, placeholder, inner);
      if (value !== undefined) out[k] = value;
    }
    const ap = s.additionalProperties;
    if (ap) out.additionalProperty = ap === true || Object.keys(ap).length === 0 ? 'anything' : exampleFor(ap, placeholder, inner);
    const alt = s.oneOf?.[0] ?? s.anyOf?.[0];
    if (alt) Object.assign(out, exampleFor(alt, placeholder, inner));
    for (const part of s.allOf ?? []) Object.assign(out, exampleFor(part, placeholder, inner));
    return out;
  }
  if (s.type === 'array' || s.items) return s.items ? [exampleFor(s.items, placeholder, inner)] : [];
  for (const alt of s.oneOf ?? s.anyOf ?? []) {
    const r = resolve(alt);
    if (r && r.type !== 'null') return exampleFor(r, placeholder, inner);
  }
  if (Array.isArray(s.type) && s.type.includes('null')) return null;
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  if (type === 'string') return FORMAT_EXAMPLES[s.format] ?? placeholder;
  if (type === 'integer' || type === 'number') return typeof s.minimum === 'number' ? s.minimum : 1;
  if (type === 'boolean') return true;
  return null;
}

function operations(): { method: string; path: string; op: any }[] {
  return Object.entries<any>(doc.paths).flatMap(([path, item]) =>
    Object.entries<any>(item)
      .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
      .map(([method, op]) => ({ method, path, op })),
  );
}

/** The path with each path parameter's example, and every query parameter that has an example or is required. */
function exampleUrl(method: string, path: string, op: any): string {
  let url = path;
  const query = new URLSearchParams();
  for (const p of op.parameters ?? []) {
    const value = p.example ?? p.schema?.example ?? (p.required ? exampleFor(p.schema, '') : undefined);
    if (p.in === 'path') {
      expect(value, `${method} ${path}: path parameter ${p.name} has no example`).toBeDefined();
      url = url.replace(`{${p.name}}`, encodeURIComponent(String(value)));
    } else if (p.in === 'query' && value !== undefined) {
      expect(value, `${method} ${path}: required query parameter ${p.name} has no example`).not.toBe('');
      query.set(p.name, Array.isArray(value) ? value.join(',') : String(value));
    }
  }
  return query.size ? `${url}?${query}` : url;
}

/** Where `value` holds the placeholder "string" or an elided value ("sk_..."), as JSON paths. */
function placeholders(value: unknown, at = '$'): string[] {
  if (value === 'string' || (typeof value === 'string' && value.includes('...'))) return [at];
  if (Array.isArray(value)) return value.flatMap((v, i) => placeholders(v, `${at}[${i}]`));
  if (value && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => placeholders(v, `${at}.${k}`));
  return [];
}

describe('/docs', () => {
  it('loads the reference UI from our own pinned copy, with no CDN and no web fonts', async () => {
    const res = await engine.request('GET', '/docs');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    expect(res.text).toContain('<script src="/docs/scalar.js">');
    expect(res.text).toContain('"url": "/openapi.json"');
    expect(res.text).toContain('"withDefaultFonts": false');
    expect(res.text).not.toMatch(/https?:\/\//);
    // The key scheme is selected from the start, not "No authentication selected".
    expect(res.text).toMatch(/"preferredSecurityScheme": "bearerAuth"/);
  });

  it('says on its front page how to get a key: signup and verify, or the operator API', () => {
    const info = doc.info.description as string;
    expect(info).toMatch(/## Get an API key/);
    for (const path of ['POST /v1/keys', 'POST /v1/verify', 'POST /admin/v1/tenants', '"tier": "pro"', 'bearerAuth']) expect(info).toContain(path);
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
  });

  it('GET /docs/scalar.js serves the standalone bundle, gzipped when asked, 304 when unchanged', async () => {
    const plain = await engine.app.request('/docs/scalar.js');
    expect(plain.status).toBe(200);
    expect(plain.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    const js = await plain.text();
    expect(js.length).toBeGreaterThan(1_000_000);
    expect(js).toContain('createApiReference');

    const gz = await engine.app.request('/docs/scalar.js', { headers: { 'accept-encoding': 'gzip, br' } });
    expect(gz.headers.get('content-encoding')).toBe('gzip');
    const packed = new Uint8Array(await gz.arrayBuffer());
    expect(packed.length).toBeLessThan(js.length / 2);
    expect(gunzipSync(packed).toString('utf8')).toBe(js);

    const etag = plain.headers.get('etag')!;
    expect(etag).toMatch(/^"[\w-]+"$/);
    const again = await engine.app.request('/docs/scalar.js', { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
  });
});

describe('examples in /openapi.json', () => {
  it('every response example shows real values, not the placeholder "string"', () => {
    const found: string[] = [];
    for (const { method, path, op } of operations()) {
      for (const [status, response] of Object.entries<any>(op.responses ?? {})) {
        const media = response.content?.['application/json'];
        if (!media) continue;
        const example = media.example ?? exampleFor(media.schema, 'string');
        // Named by the component where there is one: the error body repeats on every route.
        const where = media.schema?.$ref ? String(media.schema.$ref).split('/').pop() : `${method.toUpperCase()} ${path} ${status}`;
        for (const at of placeholders(example)) found.push(`${where} ${at}`);
      }
    }
    expect([...new Set(found)]).toEqual([]);
  });

  it('every operation with a JSON body documents a whole example for it', () => {
    const missing = operations()
      .filter(({ op }) => op.requestBody?.content?.['application/json'])
      .filter(({ op }) => {
        const media = op.requestBody.content['application/json'];
        return media.example === undefined && resolve(media.schema)?.example === undefined;
      })
      .map(({ method, path }) => `${method.toUpperCase()} ${path}`);
    expect(missing).toEqual([]);
  });

  it('every request body example is accepted when sent as it is documented', async () => {
    const tenant = await engine.newTenant('enterprise');
    const tried: string[] = [];
    for (const { method, path, op } of operations()) {
      const media = op.requestBody?.content?.['application/json'];
      if (!media) continue;
      const body = media.example ?? exampleFor(media.schema, '');
      const url = exampleUrl(method, path, op);
      const key = path.startsWith('/admin/') ? ADMIN_TOKEN : op.security?.length ? tenant.key : undefined;
      const res = await engine.request<{ code?: unknown } | null>(method.toUpperCase(), url, { key, body, headers: { 'x-forwarded-for': freshIp() } });
      const label = `${method.toUpperCase()} ${path} ${JSON.stringify(body)} -> ${res.status} ${res.text}`;
      // Tokens and ids in examples name nothing that exists here, so 404 or INVALID_TOKEN may
      // follow; what must not happen is a refusal of the body (or its path) as documented.
      expect(res.body?.code, label).not.toBe('VALIDATION_ERROR');
      expect(res.status, label).toBeLessThan(500);
      if (method === 'post' && path === '/v1/memories') expect(res.status, label).toBe(201);
      tried.push(`${method.toUpperCase()} ${path}`);
    }
    expect(tried).toContain('POST /v1/memories');
    expect(tried.length).toBeGreaterThanOrEqual(10);
  });

  it('every operation without a body is accepted with its documented parameter examples', async () => {
    const tenant = await engine.newTenant('enterprise');
    let tried = 0;
    for (const { method, path, op } of operations()) {
      if (op.requestBody || path.includes('export')) continue; // exports: covered by their own tests
      const res = await engine.request<{ code?: unknown } | null>(method.toUpperCase(), exampleUrl(method, path, op), {
        key: path.startsWith('/admin/') ? ADMIN_TOKEN : op.security?.length ? tenant.key : undefined,
      });
      const label = `${method.toUpperCase()} ${path} -> ${res.status} ${res.text.slice(0, 300)}`;
      expect(res.body?.code, label).not.toBe('VALIDATION_ERROR');
      expect(res.status, label).toBeLessThan(500);
      tried += 1;
    }
    expect(tried).toBeGreaterThanOrEqual(20);
  });
});
