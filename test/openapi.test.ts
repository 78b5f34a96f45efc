import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { families } from '../functions/families';
import { createEngine, type TestEngine } from './harness';
import { readFileSync } from 'node:fs';
import { errorCodes, statusesOf } from '../shared/platform/contract/errors';
import { errorsMarkdown } from '../shared/platform/contract/error-docs';
import { lintOpenApi } from './openapi-lint';
import { ERRORS_DOC_PATH, SNAPSHOT_PATH, snapshotOf } from './openapi-snapshot-file';

/**
 * The document at /openapi.json passes Redocly's linter (rules in test/redocly.yaml) with no error,
 * and keeps the promises the house makes about it: verb-style operation ids, declared tags, servers,
 * security that matches what each route really asks for, and the errors every route can answer.
 */

type Operation = {
  operationId?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  requestBody?: { content?: Record<string, unknown> };
  responses: Record<string, unknown>;
  'x-error-codes'?: string[];
};
type Doc = {
  servers?: { url: string }[];
  tags?: { name: string; description?: string }[];
  security?: Record<string, string[]>[];
  paths: Record<string, Record<string, Operation>>;
};

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

let engine: TestEngine;
let doc: Doc;
let operations: { method: string; path: string; op: Operation; name: string }[];

beforeAll(async () => {
  engine = await createEngine({ env: { SVC_ENABLE_EXPERIMENTAL: '1', METRICS_TOKEN: 'openapi-metrics-token-0123456789' } });
  const res = await engine.request<Doc>('GET', '/openapi.json');
  expect(res.status).toBe(200);
  doc = res.body;
  operations = Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, op]) => ({ method, path, op, name: `${method.toUpperCase()} ${path}` })),
  );
});
afterAll(() => engine.close());

/** A concrete URL for a templated path: every `{param}` becomes `x`. */
const urlOf = (path: string) => path.replace(/\{[^}]+\}/g, 'x');

describe('OpenAPI document', () => {
  it('passes the Redocly lint with no errors (test/redocly.yaml)', async () => {
    const result = await lintOpenApi(doc);
    if (result.warnings.length) console.warn(`OpenAPI lint warnings:\n${result.report}`);
    expect(result.errors.length, `OpenAPI lint errors:\n${result.report}`).toBe(0);
  });

  it('every operation has a unique operationId `family.verb`, named after a family', () => {
    const familyNames = new Set(families.map((f) => f.name));
    const problems: string[] = [];
    const seen = new Map<string, string>();
    for (const { name, op } of operations) {
      const id = op.operationId;
      if (!id) problems.push(`${name}: no operationId`);
      else if (!/^[a-z][a-zA-Z]*\.[a-z][a-zA-Z]*$/.test(id)) problems.push(`${name}: operationId '${id}' is not family.verb (camelCase)`);
      else if (!familyNames.has(id.split('.')[0]!)) problems.push(`${name}: operationId '${id}' does not start with a family name`);
      if (id && seen.has(id)) problems.push(`${name}: operationId '${id}' is also used by ${seen.get(id)}`);
      if (id) seen.set(id, name);
    }
    expect(problems).toEqual([]);
    expect(operations.length).toBeGreaterThan(40);
  });

  it('declares servers', () => {
    expect(doc.servers?.length).toBeGreaterThan(0);
    for (const server of doc.servers!) expect(server.url).toEqual(expect.any(String));
  });

  it("every operation's tags are declared in the document's tags", () => {
    const declared = new Set((doc.tags ?? []).map((t) => t.name));
    const problems = operations.flatMap(({ name, op }) => [
      ...(op.tags?.length ? [] : [`${name}: no tag`]),
      ...(op.tags ?? []).filter((t) => !declared.has(t)).map((t) => `${name}: tag '${t}' is not declared`),
    ]);
    expect(problems).toEqual([]);
  });

  it('every operation with a JSON request body documents 400, 413 and 415', () => {
    const problems = operations
      .filter(({ op }) => Object.keys(op.requestBody?.content ?? {}).some((type) => /json/.test(type)))
      .flatMap(({ name, op }) => ['400', '413', '415'].filter((s) => !(s in op.responses)).map((s) => `${name}: ${s} not documented`));
    expect(problems).toEqual([]);
  });

  it('security matches what each route asks for: public `[]`, keyed `bearerAuth` (operator routes `adminToken`, /metrics `metricsToken`), optional key both', async () => {
    const problems: string[] = [];
    for (const { method, path, op, name } of operations) {
      const declared = op.security ?? doc.security ?? [];
      const anonymous = await engine.request(method.toUpperCase(), urlOf(path));
      const badKey = await engine.request(method.toUpperCase(), urlOf(path), { key: 'sk_notarealkeynotarealkeynotarealkey00' });
      const schemes = declared.flatMap((r) => Object.keys(r));
      if (anonymous.status === 401) {
        const scheme = path.startsWith('/admin/') ? 'adminToken' : path === '/metrics' ? 'metricsToken' : 'bearerAuth';
        if (declared.length === 0 || declared.some((r) => Object.keys(r).length === 0) || schemes.some((s) => s !== scheme)) {
          problems.push(`${name} needs a key (401 without one) but declares security ${JSON.stringify(declared)}, not [{"${scheme}":[]}]`);
        }
        if (!('401' in op.responses)) problems.push(`${name}: 401 not documented`);
      } else if (badKey.status === 401) {
        if (!declared.some((r) => Object.keys(r).length === 0) || !schemes.includes('bearerAuth')) {
          problems.push(`${name} takes an optional key but declares security ${JSON.stringify(declared)}, not [{},{"bearerAuth":[]}]`);
        }
        if (!('401' in op.responses)) problems.push(`${name}: answers 401 to a bad key but does not document it`);
      } else if (JSON.stringify(declared) !== '[]') {
        problems.push(`${name} is public (no 401 without a key) but declares security ${JSON.stringify(declared)}, not []`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('every operation documents the 400 it answers for a NUL character in the URL', async () => {
    const problems: string[] = [];
    for (const { method, path, op, name } of operations) {
      const res = await engine.request(method.toUpperCase(), `${urlOf(path)}?probe=%00`);
      if (res.status !== 400) problems.push(`${name}?probe=%00 answered ${res.status}, not 400`);
      if (!('400' in op.responses)) problems.push(`${name}: 400 not documented`);
    }
    expect(problems).toEqual([]);
  });

  it('every schema default is allowed by its own type and enum', () => {
    const typeOf = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);
    const fits = (type: string, v: unknown) =>
      type === typeOf(v) || (type === 'integer' && Number.isInteger(v)) || (type === 'number' && typeof v === 'number');
    const problems: string[] = [];
    const walk = (node: unknown, at: string): void => {
      if (!node || typeof node !== 'object') return;
      const n = node as Record<string, unknown>;
      if ('default' in n && ('type' in n || 'enum' in n)) {
        const types = ([] as unknown[]).concat(n.type ?? []) as string[];
        const ok =
          (!types.length || types.some((t) => fits(t, n.default))) &&
          (!Array.isArray(n.enum) || n.enum.some((e) => JSON.stringify(e) === JSON.stringify(n.default)));
        if (!ok) problems.push(`${at}: default ${JSON.stringify(n.default)} does not fit ${JSON.stringify({ type: n.type, enum: n.enum })}`);
      }
      for (const [k, v] of Object.entries(n)) walk(v, `${at}/${k}`);
    };
    walk(doc, '#');
    expect(problems).toEqual([]);
  });

  it('every operation lists the error codes it can answer, each from the one table with the status it is answered with', () => {
    const problems: string[] = [];
    for (const { name, op } of operations) {
      const listed = op['x-error-codes'];
      if (!listed?.length) problems.push(`${name}: no x-error-codes`);
      for (const code of listed ?? []) {
        const entry = errorCodes[code as keyof typeof errorCodes];
        if (!entry) problems.push(`${name}: ${code} is not in the error table`);
        else if (!statusesOf(code as keyof typeof errorCodes).some((status) => op.responses[String(status)]))
          problems.push(`${name}: ${code} is answered with ${entry.status}, which the operation does not declare`);
      }
    }
    expect(problems).toEqual([]);
    const submit = doc.paths['/v1/actions']!.post!;
    expect(submit['x-error-codes']).toEqual(expect.arrayContaining(['BLOCKED', 'UNAUTHORIZED', 'VALIDATION_ERROR', 'RATE_LIMITED']));
    const decide = doc.paths['/v1/approvals/{approval_id}/decision']!.post!;
    expect(decide['x-error-codes']).toEqual(
      expect.arrayContaining(['control.invalid_decision', 'svc_ram.v1.control.approval_not_found', 'svc_ram.v1.control.approval_already_decided']),
    );
  });

  it('docs/errors.md is the error table (npm run openapi:snapshot rewrites it)', () => {
    const committed = readFileSync(ERRORS_DOC_PATH, 'utf8');
    expect(
      committed,
      'docs/errors.md differs from the error table in shared/platform/contract/errors.ts: run `npm run openapi:snapshot` and commit the result',
    ).toBe(errorsMarkdown());
  });

  it('the served document is the committed snapshot (npm run openapi:snapshot rewrites it)', () => {
    const committed = readFileSync(SNAPSHOT_PATH, 'utf8');
    const served = snapshotOf(doc as unknown as Record<string, unknown>);
    expect(
      served === committed,
      '/openapi.json differs from test/openapi.snapshot.json: the contract changed. Review the change, then run `npm run openapi:snapshot` and commit test/openapi.snapshot.json',
    ).toBe(true);
  });
});
