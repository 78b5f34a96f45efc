import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, errorOf, type TestEngine } from './harness';

let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const period = () => engine.clock.now().toISOString().slice(0, 7);

async function setCounter(tenantId: string, metric: string, bucket: string, value: number) {
  await engine.node.services.db.execute(sql`
    INSERT INTO usage_counters (tenant_id, metric, bucket, value) VALUES (${tenantId}, ${metric}, ${bucket}, ${value})
    ON CONFLICT (tenant_id, metric, bucket) DO UPDATE SET value = EXCLUDED.value`);
}

/**
 * The month's api_calls as the service counts them, read through the API: a 429 for an exhausted
 * quota carries it (and the refused call is not counted).
 */
async function exhaustedCount(key: string): Promise<number> {
  const res = await engine.request('GET', '/v1/keys', { key });
  expect(res.status).toBe(429);
  return errorOf(res).usage!.current;
}

describe('GET /v1/usage', () => {
  it('reports every documented field and counts each call', async () => {
    const t = await engine.newTenant('starter');
    const first = await engine.request('GET', '/v1/usage', { key: t.key });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      tier: 'starter',
      api_calls: { current: 1, used: 1, limit: 50_000, unlimited: false },
      memories: { current: 0, limit: 50_000 },
      rollbacks: { current: 0, limit: 50, unlimited: false },
      audit_retention_days: 14,
      period: period(),
      usage_pressure_level: 'low',
      budget_alert: false,
      upgrade_message: null,
      quota_percent: { api_calls: 0, memories: 0, rollbacks: 0 },
    });
    expect(first.body.features).toMatchObject({ sharing: true, audit_export: true, replay: false, webhooks: false });
    expect(first.body.resets_at).toMatch(/^\d{4}-\d{2}-01T00:00:00.000Z$/);
    expect(first.body.spend_estimate).toHaveProperty('projected_spend_estimate_usd', 29);
    expect(first.body).toHaveProperty('projected_limit_date');

    await engine.request('GET', '/v1/keys', { key: t.key });
    const third = await engine.request('GET', '/v1/usage', { key: t.key });
    expect(third.body.api_calls.current).toBe(3);
  });

  it('enterprise is unlimited with null limits', async () => {
    const t = await engine.newTenant('enterprise');
    const res = await engine.request('GET', '/v1/usage', { key: t.key });
    expect(res.body.api_calls).toMatchObject({ limit: null, unlimited: true });
    expect(res.body.rollbacks.unlimited).toBe(true);
    expect(res.body.audit_retention_days).toBe(90);
  });

  it('raises pressure, budget alert and upgrade message as the quota fills', async () => {
    const t = await engine.newTenant();
    await setCounter(t.tenantId, 'api_calls', period(), 4_700);
    const res = await engine.request('GET', '/v1/usage', { key: t.key });
    expect(res.body.api_calls.current).toBe(4_701);
    expect(res.body.quota_percent.api_calls).toBeCloseTo(94, 0);
    expect(res.body.usage_pressure_level).toBe('high');
    expect(res.body.budget_alert).toBe(true);
    expect(res.body.upgrade_message).toMatch(/upgrade/);
  });
});

describe('monthly quota', () => {
  it('answers 429 RATE_LIMITED with usage and Retry-After once api_calls run out, and does not count refusals', async () => {
    const t = await engine.newTenant();
    await setCounter(t.tenantId, 'api_calls', period(), 4_999);
    expect((await engine.request('GET', '/v1/keys', { key: t.key })).status).toBe(200);
    const refused = await engine.request('GET', '/v1/keys', { key: t.key });
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({
      code: 'RATE_LIMITED',
      usage: { current: 5_000, limit: 5_000, plan: 'free' },
    });
    expect(errorOf(refused).upgrade_url).toMatch(/^https?:/);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await exhaustedCount(t.key)).toBe(5_000);
  });

  it('a new period starts from zero', async () => {
    const t = await engine.newTenant();
    await setCounter(t.tenantId, 'api_calls', period(), 5_000);
    expect((await engine.request('GET', '/v1/keys', { key: t.key })).status).toBe(429);
    const now = engine.clock.now();
    const thisPeriod = period();
    const nextMonth = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 2) - now.getTime();
    engine.clock.advance(nextMonth);
    try {
      const res = await engine.request('GET', '/v1/usage', { key: t.key });
      expect(res.status).toBe(200);
      expect(res.body.api_calls.current).toBe(1);
      expect(res.body.period).toBe('2026-12');
      expect(thisPeriod).toBe('2026-11');
    } finally {
      engine.clock.advance(-nextMonth);
    }
  });

  it('counts exactly under concurrency: 200 parallel calls, 150 left → 150 served, 50 refused', async () => {
    const t = await engine.newTenant();
    await setCounter(t.tenantId, 'api_calls', period(), 4_850);
    const results = await Promise.all(Array.from({ length: 200 }, () => engine.request('GET', '/v1/keys', { key: t.key })));
    expect(results.filter((r) => r.status === 200)).toHaveLength(150);
    expect(results.filter((r) => r.status === 429)).toHaveLength(50);
    expect(await exhaustedCount(t.key)).toBe(5_000);
  });

  it('counts exactly across instances sharing one database', async (ctx) => {
    if (engine.node.services.storage === 'embedded') {
      ctx.skip(); // embedded PGlite belongs to one process by design; the integration run covers this
    }
    const other = await createEngine();
    try {
      const t = await engine.newTenant();
      await setCounter(t.tenantId, 'api_calls', period(), 4_900);
      const calls = Array.from({ length: 160 }, (_, i) => (i % 2 ? engine : other).request('GET', '/v1/keys', { key: t.key }));
      const results = await Promise.all(calls);
      expect(results.filter((r) => r.status === 200)).toHaveLength(100);
      expect(await exhaustedCount(t.key)).toBe(5_000);
      const elsewhere = await other.request('GET', '/v1/keys', { key: t.key });
      expect(errorOf(elsewhere).usage?.current).toBe(5_000);
    } finally {
      await other.close();
    }
  });

  it('with Redis, counts reach Postgres and survive Redis losing them', async (ctx) => {
    const gate = engine.node.services.gate;
    if (!gate) ctx.skip(); // counting happens in Postgres itself without Redis
    const t = await engine.newTenant('starter');
    for (let i = 0; i < 7; i++) expect((await engine.request('GET', '/v1/keys', { key: t.key })).status).toBe(200);
    await gate!.flush();
    // Redis restarted without its data: the counters come back from what was flushed.
    const { Redis } = await import('ioredis');
    const redis = new Redis(process.env.TEST_REDIS_URL!);
    try {
      const keys = await redis.keys(`engram:ctr:${t.tenantId}|*`);
      expect(keys.length).toBe(2); // the month and the day
      await redis.del(...keys);
    } finally {
      redis.disconnect();
    }
    const res = await engine.request('GET', '/v1/dashboard', { key: t.key });
    expect(res.body.api_calls_today).toBe(8);
    const usage = await engine.request('GET', '/v1/usage', { key: t.key });
    expect(usage.body.api_calls.current).toBe(9);
  });
});

describe('usage reports across instances (Postgres and Redis)', () => {
  const memoriesSeenBy = async (e: TestEngine, key: string) => {
    const res = await e.request('GET', '/v1/usage', { key });
    expect(res.status).toBe(200);
    return res.body.memories.current as number;
  };
  const store = (e: TestEngine, key: string, i: number) =>
    e.request('POST', '/v1/memories', { key, body: { observation: `usage across instances ${i} ${crypto.randomUUID()}`, auto_link: false } });

  it('a report on one instance counts every write another has answered, its copy warm or not', async (ctx) => {
    if (!engine.node.services.gate) ctx.skip(); // reports are cached per instance only with Redis
    const other = await createEngine();
    try {
      const t = await engine.newTenant('pro');
      for (let i = 0; i < 6; i++) {
        await memoriesSeenBy(other, t.key); // the copy is warm: read twice, the second from it
        expect(await memoriesSeenBy(other, t.key)).toBe(i);
        expect((await store(engine, t.key, i)).status).toBe(201);
        expect(await memoriesSeenBy(other, t.key)).toBe(i + 1);
      }
      // Writes and reports side by side: a report started after a write answered counts it.
      let answered = 6;
      const reads: Promise<{ floor: number; status: number; seen: number }>[] = [];
      const stored = await Promise.all(
        Array.from({ length: 12 }, async (_, i) => {
          const res = await store(engine, t.key, 100 + i);
          const floor = ++answered;
          reads.push(other.request('GET', '/v1/usage', { key: t.key }).then((r) => ({ floor, status: r.status, seen: r.body.memories?.current })));
          return res.status;
        }),
      );
      expect(stored.every((status) => status === 201)).toBe(true);
      const seen = await Promise.all(reads);
      expect(seen.filter((r) => r.status !== 200 || r.seen < r.floor)).toEqual([]);
      expect(await memoriesSeenBy(other, t.key)).toBe(18);
    } finally {
      await other.close();
    }
  });

  it('a report read while a write is in flight is not kept past its commit', async (ctx) => {
    const url = process.env.TEST_DATABASE_URL;
    if (!engine.node.services.gate || !url) ctx.skip();
    const other = await createEngine();
    const { default: pg } = await import('pg');
    const blocker = new pg.Client({ connectionString: url });
    await blocker.connect();
    try {
      const t = await engine.newTenant('pro');
      expect((await store(engine, t.key, 0)).status).toBe(201); // the tenant's audit chain head exists
      // Once that write has left the writers (an idle instance sends it after a short timer), the other's copy is kept.
      await new Promise((r) => setTimeout(r, 100));
      expect(await memoriesSeenBy(other, t.key)).toBe(1);
      expect(await memoriesSeenBy(other, t.key)).toBe(1);
      // The store's last statement takes the tenant's chain head: held here, the store waits
      // between its announcement and its commit.
      await blocker.query('BEGIN');
      await blocker.query('SELECT 1 FROM audit_heads WHERE tenant_id = $1 FOR UPDATE', [t.tenantId]);
      const storing = store(engine, t.key, 1);
      for (let waited = 0; ; waited += 20) {
        const { rows } = await blocker.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))');
        if (rows[0].n > 0) break;
        if (waited > 10_000) throw new Error('the store never waited for the chain head');
        await new Promise((r) => setTimeout(r, 20));
      }
      // Read twice while it waits (a second read would come from a kept copy).
      expect(await memoriesSeenBy(other, t.key)).toBe(1);
      expect(await memoriesSeenBy(other, t.key)).toBe(1);
      await blocker.query('COMMIT');
      expect((await storing).status).toBe(201);
      expect(await memoriesSeenBy(other, t.key)).toBe(2);
      expect(await memoriesSeenBy(other, t.key)).toBe(2);
    } finally {
      await blocker.query('ROLLBACK').catch(() => undefined);
      await blocker.end();
      await other.close();
    }
  });
});

describe('per-key request rate', () => {
  it('refuses with 429, Retry-After and rate headers past the tier’s requests per minute', async () => {
    const small = await createEngine({ env: { RATE_LIMIT_SCALE: '0.01' } }); // free: 600/min → 6/min
    try {
      const t = await small.newTenant();
      // The clock stands still half a second into a minute, so every request falls in one fixed window.
      small.clock.set(Math.ceil(small.clock.now().getTime() / 60_000) * 60_000 + 500);
      const first = await small.request('GET', '/v1/keys', { key: t.key });
      // The IETF fields: the minute window and the month's API calls (free: 5,000), each with what is left and when it resets.
      expect(first.headers.get('ratelimit-policy')).toBe('"minute";q=6;w=60, "month";q=5000');
      expect(first.headers.get('ratelimit')).toMatch(/^"minute";r=5;t=60, "month";r=4999;t=\d+$/);
      const statuses: number[] = [first.status];
      for (let i = 1; i < 8; i++) statuses.push((await small.request('GET', '/v1/keys', { key: t.key })).status);
      expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429, 429]);
      const refused = await small.request('GET', '/v1/keys', { key: t.key });
      expect(refused.headers.get('ratelimit')).toBe('"minute";r=0;t=60');
      expect(errorOf(refused).code).toBe('RATE_LIMITED');
      expect(errorOf(refused).usage).toMatchObject({ limit: 6, plan: 'free' });
      const retry = Number(refused.headers.get('retry-after'));
      expect(retry).toBe(60); // 59.5 s to the next window, rounded up
      expect(refused.headers.get('x-ratelimit-limit')).toBe('6');
      // Another key of the same tenant has its own window.
      const rotated = await small.request('POST', '/v1/keys/rotate', { key: t.key });
      expect(rotated.status).toBe(429);
      small.clock.advance(61_000);
      const fresh = await small.request('POST', '/v1/keys/rotate', { key: t.key });
      expect(fresh.status).toBe(200);
      expect((await small.request('GET', '/v1/keys', { key: fresh.body.new_key })).status).toBe(200);
    } finally {
      await small.close();
    }
  });
});

describe('MCP messages that call no route', () => {
  it('pass a rate window of their own per key and count no API calls; tool calls count as their routes', async () => {
    const small = await createEngine({ env: { RATE_LIMIT_SCALE: '0.01' } }); // free: 600/min → 6/min
    try {
      const t = await small.newTenant();
      small.clock.set(Math.ceil(small.clock.now().getTime() / 60_000) * 60_000 + 500);
      const rpc = (method: string, params: Record<string, unknown> = {}) =>
        small.app.fetch(
          new Request('http://127.0.0.1/mcp', {
            method: 'POST',
            headers: {
              authorization: `Bearer ${t.key}`,
              'content-type': 'application/json',
              accept: 'application/json, text/event-stream',
              'mcp-protocol-version': '2025-11-25',
            },
            body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
          }),
        );
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++) statuses.push((await rpc(i % 2 ? 'ping' : 'tools/list')).status);
      expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429, 429]);
      const refused = await rpc('ping');
      expect(refused.headers.get('retry-after')).toBe('60');
      expect(await refused.json()).toMatchObject({ code: 'RATE_LIMITED', usage: { limit: 6 } });
      // None of them was an API call; a tool call is, through its route's own window.
      const usage = await small.request('GET', '/v1/usage', { key: t.key });
      expect(usage.status, usage.text).toBe(200);
      expect(usage.body.api_calls.current).toBe(1); // this request alone
      const call = await rpc('tools/call', { name: 'list_memories', arguments: {} });
      expect(call.status).toBe(200);
      expect(JSON.stringify(await call.json())).toContain('"memories"');
    } finally {
      await small.close();
    }
  });
});

describe('GET /v1/dashboard and /v1/milestones', () => {
  it('dashboard shows counts, limits and today’s calls', async () => {
    const t = await engine.newTenant('pro');
    await engine.request('GET', '/v1/keys', { key: t.key });
    const res = await engine.request('GET', '/v1/dashboard', { key: t.key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      memory_count: 0,
      tier: 'pro',
      api_calls_today: 2,
      limits: { api_calls: 500_000, memories: 500_000, rollbacks: null },
      pressure: 'low',
      period: period(),
    });
    expect(res.body.features.replay).toBe(true);
    expect(res.body.usage_percent).toEqual({ api_calls: 0, memories: 0, rollbacks: 0 });
  });

  it('milestones start empty, and a recorded milestone is listed once', async () => {
    const t = await engine.newTenant();
    const empty = await engine.request('GET', '/v1/milestones', { key: t.key });
    expect(empty.body).toEqual({ milestones: [], total: 0 });
    const { recordMilestone } = await import('../shared/platform/data/milestones');
    const at = engine.clock.now();
    await recordMilestone(engine.node.services.db, t.tenantId, 'first_memory', at, { memory_id: 'urn:uuid:x' });
    await recordMilestone(engine.node.services.db, t.tenantId, 'first_memory', new Date(at.getTime() + 5000));
    const res = await engine.request('GET', '/v1/milestones', { key: t.key });
    expect(res.body.total).toBe(1);
    expect(res.body.milestones[0]).toEqual({ milestone: 'first_memory', achieved_at: at.toISOString(), metadata: { memory_id: 'urn:uuid:x' } });
  });
});
