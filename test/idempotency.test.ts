import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../shared/platform/contract/crypto';
import { createEngine, errorOf, type Tenant, type TestEngine, type TestResponse } from './harness';

/** `Idempotency-Key` makes retries of POSTs safe (docs/architecture.md#idempotency, shared/platform/data/idempotency.ts). */
let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const DAY = 86_400_000;
const newKey = () => `idem-${crypto.randomUUID()}`;
const post = <T = never, P extends string = string>(t: Tenant, path: P, body: unknown, key?: string) =>
  engine.request<T, 'POST', P>('POST', path, { key: t.key, body, headers: key === undefined ? {} : { 'idempotency-key': key } });
const replayed = (res: TestResponse<unknown>) => res.headers.get('idempotent-replayed');

async function count(query: ReturnType<typeof sql>): Promise<number> {
  const res = await engine.sql<{ n: number | string }>(query);
  return Number(res[0].n);
}
const memoriesOf = (t: Tenant) => count(sql`SELECT count(*) AS n FROM memories WHERE tenant_id = ${t.tenantId}`);
const auditOf = (t: Tenant, operation: string) => count(sql`SELECT count(*) AS n FROM audit_log WHERE tenant_id = ${t.tenantId} AND operation = ${operation}`);

describe('Idempotency-Key on stores', () => {
  it('replays the first response without storing again; a different body is 422', async () => {
    const t = await engine.newTenant();
    const key = newKey();
    const body = { observation: 'Invoices go out in EUR.', tags: ['billing'] };
    const first = await post(t, '/v1/memories', body, key);
    expect(first.status, first.text).toBe(201);
    expect(replayed(first)).toBeNull();

    const again = await post(t, '/v1/memories', body, key);
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(replayed(again)).toBe('true');
    expect(again.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'));
    expect(await memoriesOf(t)).toBe(1);
    expect(await auditOf(t, 'memory.create')).toBe(1);

    const other = await post(t, '/v1/memories', { ...body, importance: 9 }, key);
    expect(other.status).toBe(422);
    expect(other.body).toMatchObject({ code: 'VALIDATION_ERROR', status: 422, details: [{ path: 'Idempotency-Key' }] });
    // The path and the query are part of the request too.
    expect((await post(t, '/v1/memories?x=1', body, key)).status).toBe(422);
    expect((await post(t, '/v1/rollback', { target: new Date().toISOString() }, key)).status).toBe(422);
    expect(await memoriesOf(t)).toBe(1);

    // Without a key, or with another key, the same body is stored again (lww supersedes).
    expect((await post(t, '/v1/memories', body)).status).toBe(201);
    expect((await post(t, '/v1/memories', body, newKey())).status).toBe(201);
    expect(await memoriesOf(t)).toBe(3);
  });

  it('ten concurrent requests with one key store one memory and all get its response', async () => {
    const t = await engine.newTenant();
    const key = newKey();
    const body = { observation: 'Concurrent retry of one write.', tags: ['race'] };
    const all = await Promise.all(Array.from({ length: 10 }, () => post(t, '/v1/memories', body, key)));
    expect(all.map((r) => r.status)).toEqual(Array(10).fill(201));
    expect(new Set(all.map((r) => r.body.uuid)).size).toBe(1);
    expect(all.filter((r) => replayed(r) === null)).toHaveLength(1);
    expect(await memoriesOf(t)).toBe(1);
    expect(await auditOf(t, 'memory.create')).toBe(1);
  });

  it('keys belong to a tenant: another tenant with the same key does its own work', async () => {
    const [a, b] = [await engine.newTenant(), await engine.newTenant()];
    const key = newKey();
    const first = await post(a, '/v1/memories', { observation: 'tenant a' }, key);
    const second = await post(b, '/v1/memories', { observation: 'tenant b' }, key);
    expect([first.status, second.status]).toEqual([201, 201]);
    expect(replayed(second)).toBeNull();
    expect(second.body.uuid).not.toBe(first.body.uuid);
  });

  it('errors are not kept: after a refused request the same key runs again', async () => {
    const t = await engine.newTenant();
    const key = newKey();
    const bad = await post(t, '/v1/memories', { observation: '' }, key);
    expect(bad.status).toBe(400);
    const good = await post(t, '/v1/memories', { observation: 'fixed now' }, key);
    expect(good.status).toBe(201);
    expect(replayed(good)).toBeNull();

    // A conflict (409, nothing written) is not kept either: the retry decides afresh.
    const dupKey = newKey();
    const dup = { observation: 'fixed now', on_conflict: 'reject' };
    expect((await post(t, '/v1/memories', dup, dupKey)).status).toBe(409);
    await engine.request('DELETE', `/v1/memories/${good.body.id}`, { key: t.key });
    const retried = await post(t, '/v1/memories', dup, dupKey);
    expect(retried.status).toBe(201);
    expect(replayed(retried)).toBeNull();
  });

  it('a key is kept 24 hours, then it is new again, and maintenance prunes it', async () => {
    const t = await engine.newTenant();
    const key = newKey();
    const body = { observation: 'kept for a day' };
    expect((await post(t, '/v1/memories', body, key)).status).toBe(201);
    engine.clock.advance(DAY - 60_000);
    try {
      expect(replayed(await post(t, '/v1/memories', body, key))).toBe('true');
      engine.clock.advance(120_000);
      const after = await post(t, '/v1/memories', { observation: 'another body, a day later' }, key);
      expect(after.status).toBe(201);
      expect(replayed(after)).toBeNull();
      expect(await memoriesOf(t)).toBe(2);
      engine.clock.advance(DAY + 60_000);
      await engine.node.runner.maintain();
      expect(await count(sql`SELECT count(*) AS n FROM idempotency_keys WHERE tenant_id = ${t.tenantId}`)).toBe(0);
    } finally {
      engine.clock.advance(-(2 * DAY + 120_000));
    }
  });

  it('refuses a malformed key', async () => {
    const t = await engine.newTenant();
    for (const key of ['', 'x'.repeat(256), 'with space', 'naïve']) {
      const res = await engine.request('POST', '/v1/memories', { key: t.key, body: { observation: 'x' }, headers: { 'idempotency-key': key } });
      expect(res.status, JSON.stringify(key)).toBe(400);
      expect(errorOf(res).details?.[0].path).toBe('Idempotency-Key');
    }
    expect(await memoriesOf(t)).toBe(0);
    expect((await post(t, '/v1/memories', { observation: 'x' }, 'x'.repeat(255))).status).toBe(201);
  });

  it('a request still running makes a repeat wait, then 409; a dead run is taken over after its lock', async () => {
    const t = await engine.newTenant();
    const body = { observation: 'running elsewhere' };
    const hash = await sha256Hex(`POST\n/v1/memories\n\n${JSON.stringify(body)}`);
    const now = engine.clock.now();
    const insert = async (key: string, lockedUntil: Date) =>
      engine.node.services.db.execute(sql`
        INSERT INTO idempotency_keys (tenant_id, key_hash, request_hash, status, locked_until, created_at, expires_at)
        VALUES (${t.tenantId}, ${await sha256Hex(key)}, ${hash}, 'running', ${lockedUntil.toISOString()}, ${now.toISOString()}, ${new Date(now.getTime() + DAY).toISOString()})`);

    const busy = newKey();
    await insert(busy, new Date(now.getTime() + 60_000));
    const started = Date.now();
    const waited = await post(t, '/v1/memories', body, busy);
    expect(waited.status).toBe(409);
    expect(errorOf(waited).code).toBe('CONFLICT');
    expect(waited.headers.get('retry-after')).toBe('1');
    expect(waited.headers.get('idempotency-status')).toBe('in-progress');
    expect(Date.now() - started).toBeGreaterThanOrEqual(4_000);
    expect(await memoriesOf(t)).toBe(0);

    const dead = newKey();
    await insert(dead, new Date(now.getTime() - 1));
    const taken = await post(t, '/v1/memories', body, dead);
    expect(taken.status).toBe(201);
    expect(replayed(await post(t, '/v1/memories', body, dead))).toBe('true');
    expect(await memoriesOf(t)).toBe(1);
  });

  it('a retry after the work committed but its response was lost is 409, never a second write', async () => {
    const t = await engine.newTenant();
    const body = { observation: 'answered, then the answer was lost' };
    const key = newKey();
    expect((await post(t, '/v1/memories', body, key)).status).toBe(201);
    // The crash between the commit and the kept response: the row as the work's transaction left it.
    await engine.node.services.db.execute(sql`
      UPDATE idempotency_keys SET status = 'committed', response_status = NULL, response_headers = NULL, response_body = NULL
      WHERE tenant_id = ${t.tenantId} AND key_hash = ${await sha256Hex(key)}`);
    engine.clock.advance(3 * 60_000); // past the lock of the run that died
    try {
      const retry = await post(t, '/v1/memories', body, key);
      expect(retry.status).toBe(409);
      expect(errorOf(retry).message).toMatch(/completed, but its response was lost/);
      expect(retry.headers.get('idempotency-status')).toBeNull(); // not one to retry
      expect(await memoriesOf(t)).toBe(1);
      expect(await auditOf(t, 'memory.create')).toBe(1);
    } finally {
      engine.clock.advance(-3 * 60_000);
    }
  });
});

describe('Idempotency-Key on rollback and shares', () => {
  it('a retried rollback is replayed, not run again', async () => {
    const t = await engine.newTenant();
    expect((await post(t, '/v1/memories', { observation: 'before' })).status).toBe(201);
    engine.clock.advance(1000);
    const target = engine.clock.now().toISOString();
    engine.clock.advance(1000);
    expect((await post(t, '/v1/memories', { observation: 'after' })).status).toBe(201);
    engine.clock.advance(1000);

    const key = newKey();
    const first = await post(t, '/v1/rollback', { target }, key);
    expect(first.status, first.text).toBe(200);
    expect(first.body.operations_undone).toBe(1);
    const again = await post(t, '/v1/rollback', { target }, key);
    expect(again.status).toBe(200);
    expect(replayed(again)).toBe('true');
    expect(again.body).toEqual(first.body);
    expect((await engine.request('GET', '/v1/rollback/history', { key: t.key })).body.total).toBe(1);
    expect(await auditOf(t, 'rollback')).toBe(1);
    expect((await engine.request('GET', '/v1/usage', { key: t.key })).body.rollbacks.current).toBe(1);
  });

  it('a retried share mails one invitation and answers the same token; rotate and join too', async () => {
    const owner = await engine.newTenant('starter');
    const recipient = await engine.newTenant('starter');
    const key = newKey();
    const body = { tag: 'billing', email: recipient.email };
    const first = await post(owner, '/v1/spaces/share', body, key);
    expect(first.status, first.text).toBe(201);
    const again = await post(owner, '/v1/spaces/share', body, key);
    expect(again.status).toBe(201);
    expect(replayed(again)).toBe('true');
    expect(again.body).toEqual(first.body);
    const shared = await engine.request('GET', '/v1/spaces/shared', { key: owner.key });
    expect(shared.body.shared_by_me).toHaveLength(1);
    const mails = await engine.admin('GET', `/admin/v1/mail?to=${encodeURIComponent(recipient.email)}`);
    expect(mails.body.messages).toHaveLength(1);
    expect(await auditOf(owner, 'share.created')).toBe(1);
    // The kept response holds the share token: the table has neither it nor the key in the clear.
    const stored = await engine.sql<{ row: string }>(sql`SELECT k::text AS row FROM idempotency_keys k WHERE tenant_id = ${owner.tenantId}`);
    expect(stored).toHaveLength(1);
    expect(stored[0].row).not.toContain(first.body.token);
    expect(stored[0].row).not.toContain(key);

    const rotateKey = newKey();
    const rotated = await post(owner, `/v1/spaces/share/${first.body.share_id}/rotate`, undefined, rotateKey);
    expect(rotated.status, rotated.text).toBe(200);
    const rotatedAgain = await post(owner, `/v1/spaces/share/${first.body.share_id}/rotate`, undefined, rotateKey);
    expect(replayed(rotatedAgain)).toBe('true');
    expect(rotatedAgain.body.token).toBe(rotated.body.token);
    expect(await auditOf(owner, 'share.rotated')).toBe(1);

    const joinKey = newKey();
    const joined = await post(recipient, '/v1/spaces/join', { token: rotated.body.token }, joinKey);
    expect(joined.status, joined.text).toBe(200);
    const joinedAgain = await post(recipient, '/v1/spaces/join', { token: rotated.body.token }, joinKey);
    expect(replayed(joinedAgain)).toBe('true');
    expect(joinedAgain.body).toEqual(joined.body);
    expect(await auditOf(recipient, 'share.joined')).toBe(1);
  });
});

describe('Idempotency-Key on key rotation', () => {
  it('a retried rotation answers the same new key, which is never stored in the clear', async () => {
    const t = await engine.newTenant();
    const key = newKey();
    const first = await post(t, '/v1/keys/rotate', undefined, key);
    expect(first.status, first.text).toBe(200);
    const again = await post(t, '/v1/keys/rotate', undefined, key);
    expect(again.status).toBe(200);
    expect(replayed(again)).toBe('true');
    expect(again.body).toEqual(first.body);
    const secret = JSON.stringify(first.body).match(/sk_[0-9A-Za-z]{20,}/)![0];
    const stored = await engine.sql<{ row: string }>(sql`SELECT k::text AS row FROM idempotency_keys k WHERE tenant_id = ${t.tenantId}`);
    expect(stored[0].row).not.toContain(secret);
    expect(await count(sql`SELECT count(*) AS n FROM api_keys WHERE tenant_id = ${t.tenantId}`)).toBe(2);
  });
});

describe('Idempotency-Key in the API description', () => {
  it('documents the header on POST routes that need a key, and only there', async () => {
    const doc = (
      await engine.request<{ paths: Record<string, Record<string, { parameters?: { name: string; in: string }[]; responses: object }>> }>(
        'GET',
        '/openapi.json',
      )
    ).body;
    const header = (op: { parameters?: { name: string; in: string }[] }) => op.parameters?.find((p) => p.in === 'header' && p.name === 'Idempotency-Key');
    for (const [path, method] of [
      ['/v1/memories', 'post'],
      ['/v1/rollback', 'post'],
      ['/v1/spaces/share', 'post'],
      ['/v1/spaces/join', 'post'],
    ]) {
      const op = doc.paths[path][method];
      expect(header(op), `${method} ${path}`).toMatchObject({ required: false, schema: { type: 'string', maxLength: 255 } });
      expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['400', '409', '422']));
    }
    expect(header(doc.paths['/v1/memories'].get)).toBeUndefined();
    expect(header(doc.paths['/v1/keys'].post)).toBeUndefined(); // public: no tenant to keep it for
  });
});
