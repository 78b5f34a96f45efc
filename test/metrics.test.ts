import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createEngine, integration } from './harness';
import { freePort, type ServerProcess, startServer, stopServer } from './server-process';

/**
 * `/metrics` on Node: who may scrape it, and what a real Prometheus (Debian's `prometheus`, which
 * `.ci/run` installs) reads from it: requests by operationId and status with their latency, 429
 * refusals, embedding calls, the outbox and, on Postgres, the pool.
 */
const ADMIN = 'metrics-admin-token-0123456789';
const TOKEN = 'metrics-token-0123456789abcdef';
const PROMETHEUS = '/usr/bin/prometheus';

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

describe('who may scrape /metrics', () => {
  it('with METRICS_TOKEN: that bearer token only; without it: loopback clients only (an in-process request has no address)', async () => {
    const open = await createEngine();
    cleanups.push(() => open.close());
    const refused = await open.app.request('/metrics');
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: 'FORBIDDEN' });

    const guarded = await createEngine({ env: { METRICS_TOKEN: TOKEN } });
    cleanups.push(() => guarded.close());
    expect((await guarded.app.request('/metrics')).status).toBe(401);
    expect((await guarded.app.request('/metrics', { headers: { authorization: 'Bearer not-the-token-000000' } })).status).toBe(401);
    const tenant = await guarded.newTenant('pro');
    await guarded.request('POST', '/v1/memories', { key: tenant.key, body: { observation: 'A secret the metrics must never show' } });
    const ok = await guarded.app.request('/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toContain('text/plain');
    const text = await ok.text();
    expect(text).toMatch(/engram_http_requests_total\{operation="memories.store",status="201"\} 1/);
    expect(text).toMatch(/engram_embedding_call_duration_seconds_count\{provider="[^"]+",outcome="success"\} [1-9]/);
    expect(text).toMatch(/engram_outbox_depth \d+/);
    // No tenant, key, e-mail or stored text in any label.
    expect(text).not.toContain('secret');
    expect(text).not.toContain(tenant.key);
    expect(text).not.toContain(tenant.tenantId);

    // The Grafana dashboard in docs/ reads only metrics that exist (the pool's on Postgres only).
    const dashboard = readFileSync(new URL('../docs/grafana-dashboard.json', import.meta.url), 'utf8');
    const used = new Set([...dashboard.matchAll(/engram_[a-z_]+/g)].map((m) => m[0].replace(/_(bucket|count|sum)$/, '')));
    const pool = ['engram_db_pool_connections', 'engram_db_pool_waiting'];
    for (const name of used) if (integration.databaseUrl || !pool.includes(name)) expect(text, name).toContain(`# TYPE ${name} `);
    expect(used.size).toBeGreaterThanOrEqual(8);
  });
});

async function startPrometheus(target: string): Promise<{ base: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'engram-prometheus-'));
  const port = await freePort();
  const config = `global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: engram\n    metrics_path: /metrics\n    authorization:\n      credentials: ${TOKEN}\n    static_configs:\n      - targets: ['${target}']\n`;
  await writeFile(join(dir, 'prometheus.yml'), config);
  const proc: ChildProcess = spawn(
    PROMETHEUS,
    [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
    { stdio: 'ignore' },
  );
  cleanups.push(async () => {
    proc.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    if (
      await fetch(`${base}/-/ready`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return { base };
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('prometheus did not start');
}

/** The value of an instant PromQL query, once Prometheus has scraped something that answers it. */
async function promql(base: string, query: string, until: (v: number) => boolean): Promise<number> {
  let last = Number.NaN;
  for (let i = 0; i < 100; i++) {
    const res = (await (await fetch(`${base}/api/v1/query?query=${encodeURIComponent(query)}`)).json()) as { data: { result: { value: [number, string] }[] } };
    last = res.data.result.length ? Number(res.data.result[0].value[1]) : Number.NaN;
    if (until(last)) return last;
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error(`${query} stayed at ${last}`);
}

describe.skipIf(!existsSync(PROMETHEUS))('a real Prometheus scrapes the Node server', () => {
  it('reads requests by operationId and status, latency, refusals, embeddings and the outbox', async () => {
    const storage: Record<string, string> = integration.databaseUrl
      ? { DATABASE_URL: integration.databaseUrl, REDIS_URL: integration.redisUrl ?? '' }
      : { DATA_DIR: 'memory://' };
    const server: ServerProcess = await startServer(
      { ...storage, ADMIN_TOKEN: ADMIN, METRICS_TOKEN: TOKEN, EMBEDDING_PROVIDER: 'hash', LOG_LEVEL: 'warn', RATE_LIMIT_SCALE: '0.01' },
      { timeoutMs: 90_000 },
    );
    cleanups.push(() => stopServer(server));
    const created = await fetch(`${server.base}/admin/v1/tenants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: `metrics-${crypto.randomUUID().slice(0, 8)}@example.com`, tier: 'free' }),
    });
    const key = ((await created.json()) as { api_key: string }).api_key;
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    // The free tier's 600 requests a minute, scaled to 6: the seventh is a 429.
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) {
      statuses.push((await fetch(`${server.base}/v1/memories`, { method: 'POST', headers, body: JSON.stringify({ observation: `Metric note ${i}` }) })).status);
    }
    expect(statuses).toEqual([201, 201, 201, 201, 201, 201, 429]);

    const { base } = await startPrometheus(`127.0.0.1:${server.port}`);
    expect(await promql(base, 'sum(engram_http_requests_total{operation="memories.store",status="201"})', (v) => v === 6)).toBe(6);
    expect(await promql(base, 'sum(engram_limit_refusals_total{limit="rate"})', (v) => v === 1)).toBe(1);
    expect(await promql(base, 'sum(engram_http_request_duration_seconds_count{operation="memories.store"})', (v) => v >= 7)).toBeGreaterThanOrEqual(7);
    expect(await promql(base, 'sum(engram_embedding_call_duration_seconds_count{outcome="success"})', (v) => v >= 1)).toBeGreaterThanOrEqual(1);
    expect(await promql(base, 'engram_outbox_depth', (v) => v >= 0)).toBeGreaterThanOrEqual(0);
    if (integration.databaseUrl) expect(await promql(base, 'engram_db_pool_waiting', (v) => v >= 0)).toBe(0);
  }, 120_000);
});
