import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditHashInput, chainHash } from '../shared/platform/data/audit';
import { RETRY_DELAYS_MS } from '../shared/jobs/outbox';
import { NodeRunner } from '../shared/node/runner';
import { createEngine, freshIp, type TestEngine, uniqueEmail } from './harness';

/** A local stand-in for the Resend API: records requests, fails while `failing` is set. */
let server: Server;
let received: { headers: IncomingMessage['headers']; body: any }[] = [];
let failing = false;
let engine: TestEngine;

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      if (failing) {
        res.writeHead(503).end('{"error":"down"}');
        return;
      }
      received.push({ headers: req.headers, body: JSON.parse(raw) });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"email_1"}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  engine = await createEngine({
    env: { MAIL_TRANSPORT: 'resend', RESEND_API_KEY: 're_test_key', RESEND_API_URL: `http://127.0.0.1:${port}/emails` },
  });
});
afterAll(async () => {
  await engine.close();
  await new Promise((r) => server.close(r));
});

const jobsFor = async (email: string) =>
  await engine.sql<{ id: string; status: string; attempts: number; run_at: string; last_error: string | null }>(
    sql`SELECT id, status, attempts, run_at, last_error FROM outbox WHERE topic = 'mail.send' AND payload->>'to' = ${email}`,
  );

describe('transactional outbox and its dispatcher', () => {
  it('writes the verification mail as a job in the signup transaction and delivers it once', async () => {
    received = [];
    const email = uniqueEmail();
    const res = await engine.request('POST', '/v1/keys', { body: { email }, headers: { 'x-forwarded-for': freshIp() } });
    expect(res.status).toBe(201);
    await engine.node.runner.drain();
    const mine = received.filter((r) => r.body.to[0] === email);
    expect(mine).toHaveLength(1);
    expect(mine[0].headers.authorization).toBe('Bearer re_test_key');
    expect(mine[0].body.text).toMatch(/vt_[0-9A-Za-z]{32}/);
    const [job] = await jobsFor(email);
    expect(mine[0].headers['idempotency-key']).toBe(job.id);
    expect(job.status).toBe('done');
    await engine.node.runner.drain();
    expect(received.filter((r) => r.body.to[0] === email)).toHaveLength(1);
  });

  it('a runner stopped and started again runs the jobs due', async () => {
    received = [];
    const runner = new NodeRunner(engine.node.services, {}, { pollMs: 3_600_000, maintenanceMs: 3_600_000, statisticsMs: 3_600_000 });
    const wake = engine.node.services.notifyJobs;
    engine.node.services.notifyJobs = () => undefined; // only this runner may run the job
    try {
      runner.start();
      await runner.stop();
      runner.start();
      const email = uniqueEmail();
      expect((await engine.request('POST', '/v1/keys', { body: { email }, headers: { 'x-forwarded-for': freshIp() } })).status).toBe(201);
      await runner.drain();
      expect((await jobsFor(email))[0].status).toBe('done');
    } finally {
      engine.node.services.notifyJobs = wake;
      await runner.stop();
    }
  });

  it('retries a failing delivery with backoff and gives up after the last attempt', async () => {
    failing = true;
    try {
      const email = uniqueEmail();
      await engine.request('POST', '/v1/keys', { body: { email }, headers: { 'x-forwarded-for': freshIp() } });
      await engine.node.runner.drain();
      let [job] = await jobsFor(email);
      expect(job).toMatchObject({ status: 'pending', attempts: 1 });
      expect(job.last_error).toMatch(/503/);
      const due = new Date(job.run_at).getTime() - engine.clock.now().getTime();
      expect(due).toBeGreaterThan(RETRY_DELAYS_MS[0] - 5_000);

      // Not due yet: draining again does not retry.
      await engine.node.runner.drain();
      expect((await jobsFor(email))[0].attempts).toBe(1);

      let moved = 0;
      for (const delay of RETRY_DELAYS_MS) {
        engine.clock.advance(delay + 1000);
        moved += delay + 1000;
        await engine.node.runner.drain();
      }
      engine.clock.advance(-moved);
      [job] = await jobsFor(email);
      expect(job).toMatchObject({ status: 'dead', attempts: RETRY_DELAYS_MS.length + 1 });
    } finally {
      failing = false;
    }
  });

  it('a job that fails once is delivered on its retry', async () => {
    received = [];
    failing = true;
    const email = uniqueEmail();
    await engine.request('POST', '/v1/keys', { body: { email }, headers: { 'x-forwarded-for': freshIp() } });
    await engine.node.runner.drain();
    failing = false;
    engine.clock.advance(RETRY_DELAYS_MS[0] + 1000);
    try {
      await engine.node.runner.drain();
    } finally {
      engine.clock.advance(-(RETRY_DELAYS_MS[0] + 1000));
    }
    expect(received.filter((r) => r.body.to[0] === email)).toHaveLength(1);
    expect((await jobsFor(email))[0]).toMatchObject({ status: 'done', attempts: 2 });
  });
});

describe('audit chain', () => {
  it('links every entry to the previous one and refuses updates and deletes', async () => {
    const t = await engine.newTenant();
    await engine.request('POST', '/v1/keys/rotate', { key: t.key });
    const rows = await engine.sql<any>(sql`SELECT * FROM audit_log WHERE tenant_id = ${t.tenantId} ORDER BY seq`);
    expect(rows.map((r) => Number(r.seq))).toEqual([1, 2, 3, 4]);
    let prev = '';
    for (const r of rows) {
      expect(r.prev_hash).toBe(prev);
      const canonical = auditHashInput({
        id: r.id,
        tenant_id: r.tenant_id,
        seq: Number(r.seq),
        created_at: new Date(r.created_at).toISOString(),
        operation: r.operation,
        resource_type: r.resource_type,
        resource_id: r.resource_id,
        actor: r.actor,
        metadata: r.metadata,
      });
      expect(r.entry_hash).toBe(await chainHash(prev, canonical));
      prev = r.entry_hash;
    }
    await expect(engine.node.services.db.execute(sql`UPDATE audit_log SET operation = 'x' WHERE tenant_id = ${t.tenantId}`)).rejects.toThrow();
    await expect(engine.node.services.db.execute(sql`DELETE FROM audit_log WHERE tenant_id = ${t.tenantId}`)).rejects.toThrow();
  });
});
