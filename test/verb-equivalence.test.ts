import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalsVerb } from '../functions/actions/verbs';
import { listAuditVerb, verifyAuditVerb } from '../functions/audit/verbs';
import { deleteMemoryVerb, getMemoryVerb, searchVerb } from '../functions/memories/verbs';
import { testPoliciesVerb } from '../functions/policies/verbs';
import { diffVerb } from '../functions/replay/verbs';
import { listTracesVerb } from '../functions/traces/verbs';
import { listWebhooksVerb } from '../functions/webhooks/verbs';
import { authenticate } from '../shared/platform/auth';
import { makeCtx, tenantCtx } from '../shared/platform/context';
import { AppError } from '../shared/platform/errors';
import { createEngine, type Tenant, type TestEngine } from './harness';

/**
 * One table of inputs, driven through the HTTP API and through the verb as the console calls it
 * (with the session's tenant ctx): each row must give the same outcome both ways, the same body or
 * the same refusal, and a write the same audit entry. Another surface (an importer) is one more leg.
 */

let engine: TestEngine;
let pro: Tenant;
let free: Tenant;
let other: Tenant;
const keys: Record<string, string> = {};

beforeAll(async () => {
  engine = await createEngine();
  [pro, free, other] = [await engine.newTenant('pro'), await engine.newTenant('free'), await engine.newTenant('pro')];
  const mint = async (body: Record<string, unknown>) => {
    const res = await engine.request('POST', '/v1/keys/restricted', { key: pro.key, body: { name: 'k', ...body } });
    expect(res.status, res.text).toBe(201);
    return res.body.api_key as string;
  };
  keys.pro = pro.key;
  keys.free = free.key;
  keys.memoriesReader = await mint({ scopes: ['memories:read'] });
  keys.confinedAuditor = await mint({ scopes: ['audit:read'], agent_id: 'bot-1' });
  keys.allScopes = await mint({ scopes: ['*'] });
});
afterAll(() => engine.close());

type Outcome = { status: number; body: unknown };

/** A body without the measured durations it carries: those differ between any two calls. */
const untimed = (body: unknown): unknown => JSON.parse(JSON.stringify(body ?? null, (key, value) => (key === 'evaluation_time_ms' ? undefined : value)));

/** What a refusal says, without the request id only an HTTP answer has. */
const refusalOf = (body: Record<string, unknown>) => {
  const { request_id: _id, error: _text, ...rest } = body;
  return rest;
};

const throughApi = async (key: string, method: string, path: string, body?: unknown): Promise<Outcome> => {
  const res = await engine.request(method, path, { key, ...(body === undefined ? {} : { body }) });
  return { status: res.status, body: res.status >= 400 ? refusalOf(res.body as Record<string, unknown>) : untimed(res.body) };
};

/** The console's way in: the verb, called with the tenant ctx the session's key gives. */
const throughVerb = async (key: string, verb: (ctx: never, raw: unknown) => Promise<unknown>, raw: unknown): Promise<Outcome> => {
  const { services } = engine.node;
  const ctx = tenantCtx(makeCtx(services), await authenticate(services, `Bearer ${key}`));
  try {
    return { status: 200, body: untimed(await verb(ctx as never, raw)) };
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    return { status: err.status, body: { code: err.code, status: err.status, message: err.message, ...err.extra } };
  }
};

interface Row {
  name: string;
  key: keyof typeof keys | 'memoriesReader' | 'confinedAuditor' | 'allScopes';
  verb: (ctx: never, raw: unknown) => Promise<unknown>;
  api: [method: string, path: string, body?: unknown];
  raw: unknown;
  /** The status both ways give; a refusal also names its code. */
  expected: number;
  code?: string;
}

const DRAFT = { name: 'no-wires', rules: [{ match: 'action', pattern: '^wire\\.', action: 'block', severity: 'high' }] };

const rows: Row[] = [
  { name: 'valid: traces.list', key: 'pro', verb: listTracesVerb, api: ['GET', '/v1/traces?limit=5'], raw: { limit: '5' }, expected: 200 },
  {
    name: 'over a cap: traces.list limit',
    key: 'pro',
    verb: listTracesVerb,
    api: ['GET', '/v1/traces?limit=1000'],
    raw: { limit: '1000' },
    expected: 400,
    code: 'VALIDATION_ERROR',
  },
  {
    name: 'tier without the feature: traces.list',
    key: 'free',
    verb: listTracesVerb,
    api: ['GET', '/v1/traces'],
    raw: {},
    expected: 403,
    code: 'FEATURE_NOT_AVAILABLE',
  },
  {
    name: 'out of scope: traces.list with memories:read',
    key: 'memoriesReader',
    verb: listTracesVerb,
    api: ['GET', '/v1/traces'],
    raw: {},
    expected: 403,
    code: 'FORBIDDEN',
  },
  {
    name: 'tier without the feature: webhooks.list',
    key: 'free',
    verb: listWebhooksVerb,
    api: ['GET', '/v1/webhooks'],
    raw: {},
    expected: 403,
    code: 'FEATURE_NOT_AVAILABLE',
  },
  { name: 'valid: webhooks.list', key: 'pro', verb: listWebhooksVerb, api: ['GET', '/v1/webhooks'], raw: {}, expected: 200 },
  {
    name: 'invalid range: replay.diff from after to',
    key: 'pro',
    verb: diffVerb,
    api: ['GET', '/v1/replay/diff?from=2026-11-15T11:00:00.000Z&to=2026-11-15T10:00:00.000Z'],
    raw: { from: '2026-11-15T11:00:00.000Z', to: '2026-11-15T10:00:00.000Z' },
    expected: 422,
    code: 'INVALID_RANGE',
  },
  {
    name: 'invalid: replay.diff without to',
    key: 'pro',
    verb: diffVerb,
    api: ['GET', '/v1/replay/diff?from=2026-11-15T10:00:00.000Z'],
    raw: { from: '2026-11-15T10:00:00.000Z' },
    expected: 400,
    code: 'VALIDATION_ERROR',
  },
  {
    name: 'tier without the feature: replay.diff',
    key: 'free',
    verb: diffVerb,
    api: ['GET', '/v1/replay/diff'],
    raw: {},
    expected: 403,
    code: 'FEATURE_NOT_AVAILABLE',
  },
  {
    name: 'tier without the feature: audit.verify',
    key: 'free',
    verb: verifyAuditVerb,
    api: ['GET', '/v1/audit/verify'],
    raw: {},
    expected: 403,
    code: 'FEATURE_NOT_AVAILABLE',
  },
  { name: 'confined key: audit.list', key: 'confinedAuditor', verb: listAuditVerb, api: ['GET', '/v1/audit'], raw: {}, expected: 403, code: 'FORBIDDEN' },
  {
    name: 'invalid: audit.list event_type',
    key: 'pro',
    verb: listAuditVerb,
    api: ['GET', '/v1/audit?event_type=nope'],
    raw: { event_type: 'nope' },
    expected: 400,
    code: 'VALIDATION_ERROR',
  },
  {
    name: 'invalid: memories.search without q',
    key: 'pro',
    verb: searchVerb,
    api: ['GET', '/v1/memories/search?mode=keyword'],
    raw: { mode: 'keyword' },
    expected: 400,
    code: 'VALIDATION_ERROR',
  },
  {
    name: 'out of scope: policies.test with memories:read',
    key: 'memoriesReader',
    verb: testPoliciesVerb,
    api: ['POST', '/v1/control/policies/test', { action: 'x' }],
    raw: { action: 'x' },
    expected: 403,
    code: 'FORBIDDEN',
  },
  {
    name: 'invalid draft: policies.test',
    key: 'pro',
    verb: testPoliciesVerb,
    api: ['POST', '/v1/control/policies/test', { action: 'wire.send', policy: { name: 'x', rules: 'none' } }],
    raw: { action: 'wire.send', policy: { name: 'x', rules: 'none' } },
    expected: 400,
    code: 'svc_ram.v1.control.invalid_policy',
  },
  {
    name: 'valid: policies.test with a draft',
    key: 'pro',
    verb: testPoliciesVerb,
    api: ['POST', '/v1/control/policies/test', { action: 'wire.send', params: { amount: 5 }, policy: DRAFT }],
    raw: { action: 'wire.send', params: { amount: 5 }, policy: DRAFT },
    expected: 200,
  },
  {
    name: 'over a cap: actions.approvals limit',
    key: 'pro',
    verb: approvalsVerb,
    api: ['GET', '/v1/approvals?limit=501'],
    raw: { limit: '501' },
    expected: 400,
    code: 'VALIDATION_ERROR',
  },
  {
    name: 'valid: actions.approvals',
    key: 'allScopes',
    verb: approvalsVerb,
    api: ['GET', '/v1/approvals?status=pending_review'],
    raw: { status: 'pending_review' },
    expected: 200,
  },
];

describe('a verb answers the same through the API and through the console', () => {
  it.each(rows)('$name', async (row) => {
    const [method, path, body] = row.api;
    const api = await throughApi(keys[row.key]!, method, path, body);
    const verb = await throughVerb(keys[row.key]!, row.verb, row.raw);
    expect(api.status, JSON.stringify(api.body)).toBe(row.expected);
    if (row.code) expect((api.body as { code: string }).code).toBe(row.code);
    expect(verb).toEqual(api);
  });

  it("another tenant's memory is not found either way", async () => {
    const stored = await engine.request('POST', '/v1/memories', { key: other.key, body: { observation: 'theirs' } });
    const id = stored.body.uuid as string;
    const api = await throughApi(pro.key, 'GET', `/v1/memories/${id}`);
    const verb = await throughVerb(pro.key, getMemoryVerb, { id });
    expect(api.status).toBe(404);
    expect(verb).toEqual(api);
  });

  it('a delete writes the same row change and the same audit entry either way', async () => {
    const store = async () =>
      (await engine.request('POST', '/v1/memories', { key: pro.key, body: { observation: 'to forget', tags: ['eq'] } })).body.uuid as string;
    const [viaApi, viaVerb] = [await store(), await store()];
    const api = await throughApi(pro.key, 'DELETE', `/v1/memories/${viaApi}`);
    const verb = await throughVerb(pro.key, deleteMemoryVerb, { id: viaVerb });
    expect(api.status).toBe(200);
    expect(verb.status).toBe(200);
    const entryOf = async (uuid: string) => {
      const bare = uuid.replace(/^urn:uuid:/, '');
      const [entry] = await engine.sql<{ operation: string; resource_type: string; actor: string }>(
        sql`SELECT operation, resource_type, actor FROM audit_log WHERE tenant_id = ${pro.tenantId} AND resource_id IN (${bare}, ${uuid}) AND operation = 'memory.delete'`,
      );
      return entry;
    };
    const [apiEntry, verbEntry] = [await entryOf(viaApi), await entryOf(viaVerb)];
    expect(apiEntry).toBeDefined();
    expect(verbEntry).toEqual(apiEntry);
    for (const uuid of [viaApi, viaVerb]) expect((await engine.request('GET', `/v1/memories/${uuid}`, { key: pro.key })).status).toBe(404);
  });
});
