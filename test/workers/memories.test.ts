import { neonConfig, Pool } from '@neondatabase/serverless';
import { env, exports } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { errorOf, testClient } from '../client';

/**
 * Memories and context spaces inside workerd (same setup as smoke.test.ts): every request goes
 * through the worker's fetch handler, its per-request Neon pool and the local ws proxy to the real
 * Postgres + pgvector; embeddings come from the deterministic `hash` provider (EMBEDDING_PROVIDER).
 * Each describe block works on a tenant of its own, so the assertions see only its memories.
 */
const worker = (exports as unknown as { default: { fetch(req: Request): Promise<Response> } }).default;
const bindings = env as unknown as Record<string, string>;

const call = testClient((req) => worker.fetch(req), { base: 'https://engram.test' });

async function newTenant(label: string, tier: 'free' | 'pro') {
  const res = await call('POST', '/admin/v1/tenants', {
    key: bindings.ADMIN_TOKEN,
    body: { email: `${label}-${crypto.randomUUID().slice(0, 12)}@example.com`, tier },
  });
  expect(res.status, res.text).toBe(201);
  return { tenantId: res.body.tenant_id as string, key: res.body.api_key as string };
}

/**
 * Test-side seeding, straight through the Neon driver and the same ws proxy the worker uses: `n`
 * copies of one stored memory ("<observation> (copy i)"), each i seconds older than the original.
 * Storing that many through the API would make the suite slow for nothing it tests.
 */
async function seedCopies(sourceId: string, n: number) {
  const proxy = bindings.NEON_WS_PROXY;
  neonConfig.wsProxy = (host, port) => `${proxy}/v1?address=${host}:${port}`;
  neonConfig.useSecureWebSocket = false;
  neonConfig.pipelineTLS = false;
  neonConfig.pipelineConnect = false;
  const pool = new Pool({ connectionString: bindings.DATABASE_URL });
  try {
    const res = await pool.query(
      `INSERT INTO memories (id, tenant_id, observation, tags, importance, content_hash, embedding, created_at, updated_at)
       SELECT gen_random_uuid(), m.tenant_id, c.observation, m.tags, m.importance,
              encode(sha256(convert_to(c.observation, 'UTF8')), 'hex'), m.embedding,
              m.created_at - g * interval '1 second', m.created_at - g * interval '1 second'
       FROM memories m, generate_series(1, $2::int) g, LATERAL (SELECT m.observation || ' (copy ' || g || ')' AS observation) c
       WHERE m.id = $1::uuid`,
      [sourceId.replace(/^urn:uuid:/, ''), n],
    );
    expect(res.rowCount).toBe(n);
  } finally {
    await pool.end();
  }
}

const URN = /^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const CSV_HEADER = 'uuid,observation,tags,importance,confidence,recall_count,agent_id,space_id,context,hash,created_at,updated_at';

describe('worker in workerd: memories through Neon', () => {
  let tenant: { tenantId: string; key: string };
  // No commas or quotes, so the CSV rows below split plainly on ','.
  const target = { observation: 'The billing agent prefers invoices in euros', tags: ['billing', 'currency'], importance: 7, agent_id: 'billing-agent' };
  const others = ['Deploys run every Tuesday after the standup meeting', 'The office cat sleeps on the warm windowsill'];
  const PATCHED = 'The billing agent prefers invoices in Swiss francs';
  let id = '';
  const otherIds: string[] = [];

  beforeAll(async () => {
    tenant = await newTenant('memories', 'free');
  });

  it('POST /v1/memories is 201, then GET /v1/memories/{id} returns it', async () => {
    const stored = await call('POST', '/v1/memories', { key: tenant.key, body: target });
    expect(stored.status, stored.text).toBe(201);
    expect(stored.body.id).toMatch(URN);
    expect(stored.body.uuid).toBe(stored.body.id);
    expect(stored.body.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(stored.body.conflict_detected).toBe(false);
    id = stored.body.id;

    for (const observation of others) {
      const res = await call('POST', '/v1/memories', { key: tenant.key, body: { observation } });
      expect(res.status, res.text).toBe(201);
      otherIds.push(res.body.id);
    }

    const got = await call('GET', `/v1/memories/${id}`, { key: tenant.key });
    expect(got.status, got.text).toBe(200);
    expect(got.body).toMatchObject({
      uuid: id,
      observation: target.observation,
      tags: target.tags,
      importance: 7,
      agent_id: 'billing-agent',
      space_id: null,
      hash: stored.body.hash,
      owner_tenant_id: tenant.tenantId,
      created_at: stored.body.created_at,
    });
  });

  it.each(['semantic', 'hybrid'] as const)('GET /v1/memories/search?mode=%s ranks the stored memory first', async (mode) => {
    const res = await call('GET', `/v1/memories/search?q=${encodeURIComponent('invoices in euros')}&mode=${mode}&limit=10`, { key: tenant.key });
    expect(res.status, res.text).toBe(200);
    expect(res.body.mode).toBe(mode);
    expect(res.body.total_results).toBeGreaterThanOrEqual(1);
    const [first, ...rest] = res.body.memories;
    expect(first).toMatchObject({ uuid: id, observation: target.observation, owner_tenant_id: tenant.tenantId });
    expect(first.similarity).toBeGreaterThan(0.5);
    for (const hit of rest) expect(hit.score).toBeLessThan(first.score);
  });

  it('PATCH /v1/memories/{id} then GET shows the change', async () => {
    const patched = await call('PATCH', `/v1/memories/${id}`, {
      key: tenant.key,
      body: { observation: PATCHED, tags: ['billing', 'chf'], importance: 9 },
    });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.uuid).toBe(id);
    expect(patched.body.observation).toBe(PATCHED);

    const got = await call('GET', `/v1/memories/${id}`, { key: tenant.key });
    expect(got.status, got.text).toBe(200);
    expect(got.body).toMatchObject({
      uuid: id,
      observation: PATCHED,
      tags: ['billing', 'chf'],
      importance: 9,
      updated_at: patched.body.updated_at,
    });
    expect(got.body.hash).toBe(patched.body.memory.hash);
    expect(Date.parse(got.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(got.body.created_at));
  });

  // The export is a ReadableStream that reads Postgres 500 rows a page while it is consumed; the
  // worker ends the per-request pool only once the body has been piped through. The stream's first
  // pull (and page) starts before the handler returns, so 500 older copies push the second page past
  // it: its rows arrive only if the pool is still open then.
  it('GET /v1/memories/export?format=csv streams the header and every row across pages', async () => {
    await seedCopies(id, 500); // id is the oldest of the three, so the copies sort after all of them
    const res = await call('GET', '/v1/memories/export?format=csv', { key: tenant.key });
    expect(res.status, res.text.slice(0, 500)).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="memories-\d{4}-\d{2}-\d{2}\.csv"$/);

    const lines = res.text.split('\r\n');
    expect(lines.pop()).toBe(''); // every line ends with CRLF
    expect(lines[0]).toBe(CSV_HEADER);
    const rows = lines.slice(1).map((l) => Object.fromEntries(CSV_HEADER.split(',').map((c, i) => [c, l.split(',')[i]])));
    expect(rows).toHaveLength(503);
    // Newest first: the three stored through the API, then the copies in age order, none skipped
    // or repeated at the page boundary.
    expect(
      rows
        .slice(0, 3)
        .map((r) => r.uuid)
        .sort(),
    ).toEqual([id, ...otherIds].sort());
    expect(rows.slice(3).map((r) => r.observation)).toEqual(Array.from({ length: 500 }, (_, i) => `${PATCHED} (copy ${i + 1})`));
    expect(new Set(rows.map((r) => r.uuid)).size).toBe(503);
    expect(rows.find((r) => r.uuid === id)).toMatchObject({
      observation: PATCHED,
      tags: 'billing;chf',
      importance: '9',
      agent_id: 'billing-agent',
    });
  });

  it('DELETE /v1/memories/{id} then GET is 404', async () => {
    const deleted = await call('DELETE', `/v1/memories/${id}`, { key: tenant.key });
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.body).toEqual({ deleted: true, memory_id: id });

    const got = await call('GET', `/v1/memories/${id}`, { key: tenant.key });
    expect(got.status, got.text).toBe(404);
    expect(errorOf(got).code).toBe('NOT_FOUND');
    // The others are untouched.
    expect((await call('GET', `/v1/memories/${otherIds[0]}`, { key: tenant.key })).status).toBe(200);
  });
});

describe('worker in workerd: context spaces through Neon', () => {
  it('a pro tenant creates a context space and stores a memory into it', async () => {
    const pro = await newTenant('spaces-pro', 'pro');
    const created = await call('POST', '/v1/context-spaces', { key: pro.key, body: { name: 'billing-research', tags: ['billing'] } });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({ name: 'billing-research', owner_tenant_id: pro.tenantId, access: 'owner', memory_count: 0 });
    const spaceId = created.body.space_id as string;
    expect(spaceId).toMatch(URN);

    const stored = await call('POST', '/v1/memories', {
      key: pro.key,
      body: { observation: 'Quarterly invoices go out on the first Monday', space_id: spaceId },
    });
    expect(stored.status, stored.text).toBe(201);

    const got = await call('GET', `/v1/memories/${stored.body.id}`, { key: pro.key });
    expect(got.status, got.text).toBe(200);
    expect(got.body.space_id).toBe(spaceId);

    const inSpace = await call('GET', `/v1/context-spaces/${spaceId}/memories`, { key: pro.key });
    expect(inSpace.status, inSpace.text).toBe(200);
    expect(inSpace.body.total_count).toBe(1);
    expect(inSpace.body.memories.map((m: { uuid: string }) => m.uuid)).toEqual([stored.body.id]);

    const space = await call('GET', `/v1/context-spaces/${spaceId}`, { key: pro.key });
    expect(space.status, space.text).toBe(200);
    expect(space.body.memory_count).toBe(1);
  });

  it('a free tenant may create a space but not store into it (403 FEATURE_NOT_AVAILABLE)', async () => {
    const free = await newTenant('spaces-free', 'free');
    const created = await call('POST', '/v1/context-spaces', { key: free.key, body: { name: 'scratch' } });
    expect(created.status, created.text).toBe(201);
    const stored = await call('POST', '/v1/memories', {
      key: free.key,
      body: { observation: 'This should not be stored', space_id: created.body.space_id },
    });
    expect(stored.status, stored.text).toBe(403);
    expect(errorOf(stored).code).toBe('FEATURE_NOT_AVAILABLE');
  });
});
