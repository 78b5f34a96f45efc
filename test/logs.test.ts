import { request } from 'node:http';
import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { listen } from '../shared/node/http-server';
import { createLogger } from '../shared/platform/data/log';
import { createEngine, errorOf, integration, type TestEngine } from './harness';

/**
 * A failed query logs the database error and a redacted statement, never the parameters;
 * every log line is one JSON object whatever the strings in it hold.
 */
let engine: TestEngine;
const TRIGGER = 'engram_test_log_fail';
beforeAll(async () => {
  engine = await createEngine();
  // Refuses one marked insert with a message that repeats the (hostile) context: a database error
  // whose message carries user text, as `invalid input syntax ...` errors do.
  await engine.node.services.db.execute(
    sql.raw(`CREATE OR REPLACE FUNCTION ${TRIGGER}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.observation LIKE 'log-test-fail%' THEN
          RAISE EXCEPTION 'refused by the test trigger: %', coalesce(NEW.context, '');
        END IF;
        RETURN NEW;
      END $$`),
  );
  await engine.node.services.db.execute(sql.raw(`CREATE OR REPLACE TRIGGER ${TRIGGER} BEFORE INSERT ON memories FOR EACH ROW EXECUTE FUNCTION ${TRIGGER}()`));
});
afterAll(async () => {
  if (!engine) return;
  // The integration database is shared by every run: leave nothing behind.
  await engine.node.services.db.execute(sql.raw(`DROP TRIGGER IF EXISTS ${TRIGGER} ON memories`));
  await engine.node.services.db.execute(sql.raw(`DROP FUNCTION IF EXISTS ${TRIGGER}()`));
  await engine.close();
});

const silent = createLogger('silent');
afterEach(() => {
  vi.restoreAllMocks();
  engine.node.services.log = silent;
});

/** Everything the logger writes to the console from now on, as one string. */
function captureLog(on: TestEngine) {
  let out = '';
  const write = (...args: unknown[]) => void (out += `${args.map(String).join(' ')}\n`);
  for (const level of ['log', 'info', 'warn', 'error', 'debug'] as const) vi.spyOn(console, level).mockImplementation(write);
  on.node.services.log = createLogger('debug');
  return {
    text: () => out,
    /** Split the way log shippers split (LF, CR, NEL, LS, PS); every line must be one JSON object. */
    lines(): Record<string, unknown>[] {
      return out
        .split(/\r\n|[\n\r\u0085\u2028\u2029]/)
        .filter((l) => l.trim())
        .map((l) => {
          const parsed = JSON.parse(l);
          expect(typeof parsed, l).toBe('object');
          return parsed;
        });
    },
  };
}

const FORGED =
  'nice\n{"level":"info","msg":"forged"}\r{"level":"info","msg":"forged"}\u2028{"level":"info","msg":"forged"}\u0085{"level":"info","msg":"forged"}\u2029';

describe('a failed query in the log', () => {
  it('logs the database error, its code and the statement without parameters, on one JSON line', async () => {
    const t = await engine.newTenant();
    const secret = crypto.randomUUID();
    const log = captureLog(engine);
    const res = await engine.request('POST', '/v1/memories', {
      key: t.key,
      body: { observation: `log-test-fail observation-${secret}`, tags: [`tag-${secret}`], agent_id: `agent-${secret}`, context: FORGED },
    });
    expect(res.status).toBe(500);
    expect(errorOf(res).code).toBe('INTERNAL_ERROR');
    expect(res.text).not.toContain(secret);

    const lines = log.lines();
    expect(lines.filter((l) => l.msg === 'forged')).toEqual([]);
    const failure = lines.find((l) => l.msg === 'unhandled error');
    expect(failure, log.text()).toBeDefined();
    expect(failure).toMatchObject({ level: 'error', request_id: errorOf(res).request_id, pg_code: 'P0001' });
    expect(failure!.error).toContain('refused by the test trigger: nice\n{"level":"info","msg":"forged"}');
    expect(failure!.statement).toMatch(/^WITH stored AS \( INSERT INTO memories \(id, tenant_id, observation, .*FROM jsonb_to_recordset\(\$\d+::jsonb\)/);
    expect(failure!.stack).toMatch(/^at /);
    // No parameter reaches the log: not the text, tags, agent, tenant, nor the embedding.
    expect(log.text()).not.toContain(secret);
    expect(log.text()).not.toContain(t.tenantId);
    expect(log.text()).not.toMatch(/params:|Failed query/);
    expect(log.text()).not.toMatch(/\[-?\d\.\d+,-?\d\.\d+/);
  });

  it('keeps one JSON object per line for any field: line breaks, reserved names, bigints, cycles, nested secrets', () => {
    const log = captureLog(engine);
    const cyclic: Record<string, unknown> = { name: FORGED };
    cyclic.self = cyclic;
    engine.node.services.log.warn(FORGED, {
      msg: FORGED,
      level: 'info',
      count: 10n,
      cyclic,
      nested: { api_key: 'sk_live', deeper: [{ password: 'hunter2' }] },
    });
    const lines = log.lines();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'warn', msg: FORGED, field_msg: FORGED, field_level: 'info', count: '10' });
    expect(lines[0].cyclic).toEqual({ name: FORGED, self: '[circular]' });
    expect(lines[0].nested).toEqual({ api_key: '[redacted]', deeper: [{ password: '[redacted]' }] });
  });
});

describe('a failed export in the log', () => {
  // Breaking the memories table needs a database of its own: embedded only (the integration
  // database is shared by concurrent test files).
  it.skipIf(Boolean(integration.databaseUrl))('logs the error without the query parameters and answers without them', async () => {
    const own = await createEngine();
    try {
      const t = await own.newTenant();
      const secret = crypto.randomUUID();
      expect((await own.request('POST', '/v1/memories', { key: t.key, body: { observation: 'one memory' } })).status).toBe(201);
      await own.node.services.db.execute(sql`ALTER TABLE memories RENAME COLUMN context TO context_gone`);
      const log = captureLog(own);
      const agent = `x\n{"level":"info","msg":"forged"}\u2028{"msg":"forged"}-${secret}`;
      const res = await own.app.request(`/v1/memories/export?format=json&agent_id=${encodeURIComponent(agent)}`, {
        headers: { authorization: `Bearer ${t.key}` },
      });
      // The first page is read before the response starts, so the failure is an ordinary 500.
      expect(res.status).toBe(500);
      const body = await res.text();
      expect(JSON.parse(body)).toMatchObject({ code: 'INTERNAL_ERROR' });
      expect(body).not.toContain(secret);

      const lines = log.lines();
      expect(lines.filter((l) => l.msg === 'forged')).toEqual([]);
      const logged = lines.find((l) => l.msg === 'unhandled error');
      expect(logged, log.text()).toMatchObject({ level: 'error', pg_code: '42703' });
      expect(logged!.error).toMatch(/context/);
      expect(logged!.statement).toMatch(/^SELECT m\.id, m\.tenant_id/);
      expect(log.text()).not.toContain(secret);
      expect(log.text()).not.toContain(t.tenantId);
    } finally {
      await own.close();
    }
  });
});

describe('a request its client aborted', () => {
  /** Sends the start of a body over a real socket, then goes away before sending the rest. */
  function abortMidBody(port: number, key: string, headers: Record<string, string>) {
    return new Promise<void>((resolve) => {
      const req = request({
        host: '127.0.0.1',
        port,
        path: '/v1/memories',
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      });
      req.on('error', () => undefined);
      req.write('{"observation": "cut sho');
      setTimeout(() => {
        req.destroy();
        setTimeout(resolve, 300);
      }, 100);
    });
  }

  it('is logged as an abort, never as a database outage, and counts as no error response', async () => {
    const t = await engine.newTenant();
    const log = captureLog(engine);
    const { server, address } = await listen(engine.app.fetch, { host: '127.0.0.1', port: 0 });
    try {
      await abortMidBody(address.port, t.key, { 'transfer-encoding': 'chunked' });
      await abortMidBody(address.port, t.key, { 'content-length': '1000' });
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
    const lines = log.lines();
    expect(lines.filter((l) => l.msg === 'database unavailable' || l.msg === 'unhandled error')).toEqual([]);
    const aborts = lines.filter((l) => l.msg === 'request aborted by the client');
    expect(aborts, log.text()).toHaveLength(2);
    expect(aborts.map((l) => [l.level, l.method, l.path])).toEqual([
      ['info', 'POST', '/v1/memories'],
      ['info', 'POST', '/v1/memories'],
    ]);
    const counted = (await engine.node.services.db.execute(
      sql`SELECT metric FROM usage_counters WHERE tenant_id = ${t.tenantId} AND metric LIKE 'responses_%'`,
    )) as unknown as { rows: { metric: string }[] };
    expect(counted.rows).toEqual([]);
  });
});
