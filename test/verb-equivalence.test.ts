import { createHash } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalsVerb, listActionsVerb } from '../functions/actions/verbs';
import { createRestrictedVerb } from '../functions/keys/verbs';
import { listAuditVerb, verifyAuditVerb } from '../functions/audit/verbs';
import { deleteMemoryVerb, getMemoryVerb, searchVerb } from '../functions/memories/verbs';
import { createPolicyVerb, testPoliciesVerb } from '../functions/policies/verbs';
import { historyVerb, previewVerb } from '../functions/rollback/verbs';
import { createSpaceVerb } from '../functions/spaces/verbs';
import { createWebhookVerb, listWebhooksVerb } from '../functions/webhooks/verbs';
import { diffVerb } from '../functions/replay/verbs';
import { listTracesVerb } from '../functions/traces/verbs';
import { authenticate } from '../shared/platform/http/auth';
import { makeCtx, tenantCtx } from '../shared/platform/contract/context';
import { AppError } from '../shared/platform/contract/errors';
import { createEngine, type Tenant, type TestEngine } from './harness';

/**
 * One table of inputs, driven through the HTTP API and through the verb as the console calls it
 * (with the session's tenant ctx): each row must give the same outcome both ways, the same body or
 * the same refusal, and a write the same audit entry. The importer is the third leg: a bundle line
 * of each kind it restores gives the rows, audit entries and refusal the create route gives.
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
  keys.confinedActor = await mint({ scopes: ['actions:write'], agent_id: 'bot-1' });
  for (const [key, agent_id] of [
    [pro.key, 'bot-1'],
    [pro.key, 'bot-2'],
  ] as const) {
    const res = await engine.request('POST', '/v1/actions', { key, body: { action: 'http.get', agent_id, params: { url: 'https://example.com' } } });
    expect(res.status, res.text).toBe(200);
  }
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
  const ctx = tenantCtx(makeCtx(services, { registry: engine.app.registry }), await authenticate(services, `Bearer ${key}`));
  try {
    return { status: 200, body: untimed(await verb(ctx as never, raw)) };
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    return { status: err.status, body: { code: err.code, status: err.status, message: err.message, ...err.extra } };
  }
};

interface Row {
  name: string;
  key: keyof typeof keys | 'memoriesReader' | 'confinedAuditor' | 'allScopes' | 'confinedActor';
  verb: (ctx: never, raw: unknown) => Promise<unknown>;
  api: [method: string, path: string, body?: unknown];
  raw: unknown;
  /** The status both ways give; a refusal also names its code. */
  expected: number;
  code?: string;
}

const DRAFT = { name: 'no-wires', rules: [{ match: 'action', pattern: '^wire\\.', action: 'block', severity: 'high' }] };

const rows: Row[] = [
  { name: 'valid: rollback.history', key: 'pro', verb: historyVerb, api: ['GET', '/v1/rollback/history?limit=10'], raw: { limit: '10' }, expected: 200 },
  {
    name: 'out of scope: rollback.history with memories:read',
    key: 'memoriesReader',
    verb: historyVerb,
    api: ['GET', '/v1/rollback/history'],
    raw: {},
    expected: 403,
    code: 'FORBIDDEN',
  },
  {
    name: 'invalid: rollback.preview target',
    key: 'pro',
    verb: previewVerb,
    api: ['GET', '/v1/rollback/preview?target=whenever'],
    raw: { target: 'whenever' },
    expected: 400,
  },
  {
    name: 'tier without the feature: policies.create',
    key: 'free',
    verb: createPolicyVerb,
    api: ['POST', '/v1/control/policies', DRAFT],
    raw: DRAFT,
    expected: 403,
    code: 'svc_ram.v1.tier.feature_required',
  },
  {
    name: 'invalid policy: policies.create',
    key: 'pro',
    verb: createPolicyVerb,
    api: ['POST', '/v1/control/policies', { name: 'x', rules: 'none' }],
    raw: { name: 'x', rules: 'none' },
    expected: 400,
    code: 'svc_ram.v1.control.invalid_policy',
  },
  {
    name: 'invalid body is 422: webhooks.create',
    key: 'pro',
    verb: createWebhookVerb,
    api: ['POST', '/v1/webhooks', { url: 'https://example.com/hook', events: [] }],
    raw: { url: 'https://example.com/hook', events: [] },
    expected: 422,
    code: 'VALIDATION_ERROR',
  },
  {
    name: 'tier without the feature: webhooks.create',
    key: 'free',
    verb: createWebhookVerb,
    api: ['POST', '/v1/webhooks', { url: 'https://example.com/hook', events: ['memory.created'] }],
    raw: { url: 'https://example.com/hook', events: ['memory.created'] },
    expected: 403,
    code: 'FEATURE_NOT_AVAILABLE',
  },
  {
    name: 'invalid: spaces.create without a name',
    key: 'pro',
    verb: createSpaceVerb,
    api: ['POST', '/v1/context-spaces', { description: 'x' }],
    raw: { description: 'x' },
    expected: 400,
    code: 'VALIDATION_ERROR',
  },
  { name: 'valid: actions.list', key: 'pro', verb: listActionsVerb, api: ['GET', '/v1/actions?limit=5'], raw: { limit: '5' }, expected: 200 },
  {
    name: "confined key: actions.list lists only its agent's",
    key: 'confinedActor',
    verb: listActionsVerb,
    api: ['GET', '/v1/actions'],
    raw: {},
    expected: 200,
  },
  {
    name: 'over a cap: actions.list limit',
    key: 'pro',
    verb: listActionsVerb,
    api: ['GET', '/v1/actions?limit=1000'],
    raw: { limit: '1000' },
    expected: 400,
    code: 'VALIDATION_ERROR',
  },
  {
    name: 'out of scope: actions.list with memories:read',
    key: 'memoriesReader',
    verb: listActionsVerb,
    api: ['GET', '/v1/actions'],
    raw: {},
    expected: 403,
    code: 'FORBIDDEN',
  },
  {
    name: 'a restricted key: keys.createRestricted',
    key: 'allScopes',
    verb: createRestrictedVerb,
    api: ['POST', '/v1/keys/restricted', { name: 'k', scopes: ['memories:read'] }],
    raw: { name: 'k', scopes: ['memories:read'] },
    expected: 403,
    code: 'FORBIDDEN',
  },
  {
    name: 'unknown scope: keys.createRestricted names the app’s families',
    key: 'pro',
    verb: createRestrictedVerb,
    api: ['POST', '/v1/keys/restricted', { name: 'k', scopes: ['nope:read'] }],
    raw: { name: 'k', scopes: ['nope:read'] },
    expected: 400,
    code: 'VALIDATION_ERROR',
  },
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

  it("a key confined to an agent lists that agent's actions only, through the API and the console's verb", async () => {
    const api = await throughApi(keys.confinedActor!, 'GET', '/v1/actions');
    const verb = await throughVerb(keys.confinedActor!, listActionsVerb, {});
    const agents = (o: Outcome) => (o.body as { actions: { agent_id: string }[] }).actions.map((a) => a.agent_id);
    expect(agents(api)).toEqual(['bot-1']);
    expect(agents(verb)).toEqual(['bot-1']);
    const all = await throughVerb(keys.pro!, listActionsVerb, {});
    expect(agents(all).sort()).toEqual(['bot-1', 'bot-2']);
  });

  it('over the enabled-policies cap: the same refusal through the API and the verb, under the verb’s limit', async () => {
    const starter = await engine.newTenant('starter');
    for (let i = 0; i < 5; i++) {
      const res = await engine.request('POST', '/v1/control/policies', { key: starter.key, body: { ...DRAFT, name: `p${i}` } });
      expect(res.status, res.text).toBe(201);
    }
    const api = await throughApi(starter.key, 'POST', '/v1/control/policies', { ...DRAFT, name: 'one-more' });
    const verb = await throughVerb(starter.key, createPolicyVerb, { ...DRAFT, name: 'one-more' });
    expect(api.status).toBe(403);
    expect(api.body).toMatchObject({ code: 'svc_ram.v1.tier.limit_exceeded', usage: { metric: 'custom_policies', current: 5, limit: 5 } });
    expect(verb).toEqual(api);
    // A disabled one adds nothing to the count: both ways store it.
    expect((await throughVerb(starter.key, createPolicyVerb, { ...DRAFT, name: 'off', enabled: false })).status).toBe(200);
  });

  it('concurrent creates at the last place: the verb’s lock lets exactly one through, the API and the verb alike', async () => {
    const starter = await engine.newTenant('starter');
    for (let i = 0; i < 4; i++) {
      const res = await engine.request('POST', '/v1/control/policies', { key: starter.key, body: { ...DRAFT, name: `p${i}` } });
      expect(res.status, res.text).toBe(201);
    }
    const outcomes = await Promise.all([
      throughApi(starter.key, 'POST', '/v1/control/policies', { ...DRAFT, name: 'a' }),
      throughVerb(starter.key, createPolicyVerb, { ...DRAFT, name: 'b' }),
      throughApi(starter.key, 'POST', '/v1/control/policies', { ...DRAFT, name: 'c' }),
      throughVerb(starter.key, createPolicyVerb, { ...DRAFT, name: 'd' }),
    ]);
    expect(outcomes.filter((o) => o.status < 300)).toHaveLength(1);
    expect(outcomes.filter((o) => o.status === 403).map((o) => (o.body as { code: string }).code)).toEqual(Array(3).fill('svc_ram.v1.tier.limit_exceeded'));
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

/** A bundle of `records` with a valid header and trailer, as GET /v1/export/bundle writes one. */
function bundleOf(records: Record<string, unknown>[]): string {
  const header = { type: 'header', format: 'engram-bundle', version: 1, exported_at: '2026-11-01T00:00:00.000Z', tenant_id: 'ten_x', counts: {} };
  const body = [header, ...records].map((r) => `${JSON.stringify(r)}\n`).join('');
  return `${body}${JSON.stringify({ type: 'trailer', lines: records.length + 1, sha256: createHash('sha256').update(body).digest('hex') })}\n`;
}

/** The stored rows of each kind, in the tenant's own table. */
const TABLES = {
  space: (tenantId: string) => sql`SELECT * FROM context_spaces WHERE owner_tenant_id = ${tenantId} ORDER BY name`,
  policy: (tenantId: string) => sql`SELECT * FROM policies WHERE tenant_id = ${tenantId} ORDER BY name`,
  agent: (tenantId: string) => sql`SELECT * FROM runtime_agents WHERE tenant_id = ${tenantId} ORDER BY agent_id`,
  pack: (tenantId: string) => sql`SELECT * FROM runtime_capabilities WHERE tenant_id = ${tenantId} ORDER BY name`,
  triple: (tenantId: string) =>
    sql`SELECT s.name AS subject, t.predicate, o.name AS object, t.confidence, t.metadata, t.source_memory_id FROM knowledge_triples t
        JOIN knowledge_entities s ON s.id = t.subject_id JOIN knowledge_entities o ON o.id = t.object_id WHERE t.tenant_id = ${tenantId}`,
};
type Kind = keyof typeof TABLES;

/**
 * What legitimately differs between two tenants' copies of the same record: the ids (each write
 * draws its own), the tenant, the times, and the provenance of the write (`source`: an import says
 * so). Everything else must be equal. A bundle line may also carry what a create body cannot (an
 * agent's `status`): the restore then writes it with the family's update verb, one more audit entry
 * (`agent.updated`) than the create route's, so this table leaves such fields out.
 */
const VOLATILE_KEYS = new Set(['id', 'tenant_id', 'owner_tenant_id', 'created_at', 'updated_at', 'source', 'request_id']);
const ID_VALUE = /^(urn:uuid:)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$|^[a-z]+_[0-9A-Za-z]{20,}$/;
const comparable = (value: unknown, tenantId: string): unknown =>
  JSON.parse(
    JSON.stringify(value, (key, v) => {
      if (VOLATILE_KEYS.has(key) || (key.endsWith('_id') && typeof v === 'string' && ID_VALUE.test(v))) return undefined;
      if (v instanceof Date) return undefined;
      if (typeof v === 'string' && (v === tenantId || ID_VALUE.test(v))) return '<id>';
      return v;
    }),
  );

/** What a leg left behind: the rows of the kind and the audit entries after `afterSeq`, but the import's own. */
async function traceOf(tenant: Tenant, kind: Kind, afterSeq: number) {
  const rows = await engine.sql(TABLES[kind](tenant.tenantId));
  const audit = await engine.sql<{ operation: string; resource_type: string; metadata: unknown }>(
    sql`SELECT operation, resource_type, metadata FROM audit_log WHERE tenant_id = ${tenant.tenantId} AND seq > ${afterSeq} AND operation NOT LIKE 'import.%' ORDER BY seq`,
  );
  return comparable({ rows, audit }, tenant.tenantId);
}

const lastSeq = async (tenant: Tenant) =>
  Number((await engine.sql<{ seq: string | null }>(sql`SELECT max(seq) AS seq FROM audit_log WHERE tenant_id = ${tenant.tenantId}`))[0]?.seq ?? 0);

interface ImportRow {
  name: string;
  kind: Kind;
  tier?: 'starter' | 'enterprise';
  /** Run on both tenants first (through the API), e.g. filling the enabled-policies cap. */
  setup?: (tenant: Tenant) => Promise<void>;
  api: [path: string, body: Record<string, unknown>];
  /** The bundle line of the same record, as an export writes it. */
  line: Record<string, unknown>;
  /** The refusal code both ways give; none: both store it. */
  code?: string;
}

const policyBody = (fields: Record<string, unknown> = {}) => ({ name: 'NoDrops', rules: [{ match: 'drop table', severity: 'high' }], ...fields });
const fillPolicyCap = async (tenant: Tenant) => {
  for (let i = 0; i < 5; i++) {
    const res = await engine.request('POST', '/v1/control/policies', { key: tenant.key, body: policyBody({ name: `Cap${i}` }) });
    expect(res.status, res.text).toBe(201);
  }
};
const PACK = { name: 'gh', tools: [{ name: 'github.comment', description: 'Comment' }], risk_levels: { 'github.comment': 'low' } };
const AGENT = { agent_id: 'release-bot', name: 'Release bot', provider: 'openai', model: 'gpt-4.1', capabilities: [] as string[] };

const importRows: ImportRow[] = [
  {
    name: 'space',
    kind: 'space',
    api: ['/v1/context-spaces', { name: 'research', description: 'papers', tags: ['science'], allowed_agent_ids: ['bot-1'] }],
    line: {
      type: 'space',
      id: 'urn:uuid:0193a0a0-0000-7000-8000-0000000000a1',
      name: 'research',
      description: 'papers',
      tags: ['science'],
      allowed_agent_ids: ['bot-1'],
    },
  },
  { name: 'valid policy', kind: 'policy', api: ['/v1/control/policies', policyBody()], line: { type: 'policy', id: 'pol_eq1', ...policyBody() } },
  {
    name: 'policy with a bad pattern',
    kind: 'policy',
    api: ['/v1/control/policies', policyBody({ rules: [{ match: '(?<=a)b(', severity: 'high' }] })],
    line: { type: 'policy', id: 'pol_eq2', ...policyBody({ rules: [{ match: '(?<=a)b(', severity: 'high' }] }) },
    code: 'svc_ram.v1.control.invalid_policy',
  },
  {
    name: 'policy with 101 rules',
    kind: 'policy',
    api: ['/v1/control/policies', policyBody({ rules: Array.from({ length: 101 }, (_, i) => ({ match: `word${i}`, severity: 'low' })) })],
    line: { type: 'policy', id: 'pol_eq3', ...policyBody({ rules: Array.from({ length: 101 }, (_, i) => ({ match: `word${i}`, severity: 'low' })) }) },
    code: 'svc_ram.v1.control.invalid_policy',
  },
  {
    name: 'policy over the enabled-policies cap',
    kind: 'policy',
    tier: 'starter',
    setup: fillPolicyCap,
    api: ['/v1/control/policies', policyBody()],
    line: { type: 'policy', id: 'pol_eq4', ...policyBody() },
    code: 'svc_ram.v1.tier.limit_exceeded',
  },
  { name: 'pack', kind: 'pack', api: ['/v1/capabilities', PACK], line: { type: 'pack', id: 'cap_eq1', ...PACK } },
  { name: 'agent', kind: 'agent', api: ['/v1/agents', AGENT], line: { type: 'agent', ...AGENT } },
  {
    name: 'agent naming an unknown pack',
    kind: 'agent',
    api: ['/v1/agents', { ...AGENT, capabilities: ['nope'] }],
    line: { type: 'agent', ...AGENT, capabilities: ['nope'] },
    code: 'NOT_FOUND',
  },
  {
    name: 'triple',
    kind: 'triple',
    api: ['/v1/knowledge/triples', { subject: 'ada', subject_type: 'person', predicate: 'wrote', object: 'notes', confidence: 0.8 }],
    line: {
      type: 'triple',
      id: 'urn:uuid:0193a0a0-0000-7000-8000-0000000000a2',
      subject: { name: 'ada', type: 'person' },
      predicate: 'wrote',
      object: { name: 'notes' },
      confidence: 0.8,
    },
  },
];

describe('a bundle line restores what the create route stores, and refuses what it refuses', () => {
  it.each(importRows)('$name', async (row) => {
    const [viaApi, viaImport] = [await engine.newTenant(row.tier ?? 'enterprise'), await engine.newTenant(row.tier ?? 'enterprise')];
    for (const tenant of [viaApi, viaImport]) await row.setup?.(tenant);
    const [apiSeq, importSeq] = [await lastSeq(viaApi), await lastSeq(viaImport)];

    const api = await engine.request('POST', row.api[0], { key: viaApi.key, body: row.api[1] });
    const imported = await engine.request('POST', '/v1/import?format=bundle', {
      key: viaImport.key,
      raw: bundleOf([row.line]),
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(imported.status, imported.text).toBe(200);
    const errors = (imported.body as { errors: { line: number; code: string }[] }).errors.map(({ line, code }) => ({ line, code }));
    if (row.code) {
      expect([api.status >= 400, (api.body as { code?: string }).code], api.text).toEqual([true, row.code]);
      expect(errors).toEqual([{ line: 2, code: row.code }]);
    } else {
      expect(api.status, api.text).toBe(201);
      expect(errors).toEqual([]);
    }
    expect(await traceOf(viaImport, row.kind, importSeq)).toEqual(await traceOf(viaApi, row.kind, apiSeq));
  });
});
