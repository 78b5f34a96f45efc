/**
 * Crash test: the real server as a child process, concurrent writers storing memories, kill -9 in
 * the middle of the load, a restart on the same data, and then, for every tenant:
 *   - every acknowledged (201) memory is present,
 *   - the audit chain verifies (GET /v1/audit/verify), one memory checked per memory present,
 *   - the counters are exact: the live-memory count (dashboard) and the memories stored this period
 *     (usage) equal the memories present; api_calls lies between the answered and the sent requests.
 * Several rounds on the same data. Embedded by default (DATA_DIR in a fresh temporary directory);
 * --postgres (or DATABASE_URL / TEST_DATABASE_URL set) runs on Postgres, with REDIS_URL if given.
 *
 *   npx tsx test/crash/crash.ts [--rounds 3] [--writers 32] [--tenants 4] [--kill-after-ms 4000] [--postgres]
 *   npm run crash -- --rounds 5
 *
 * Exit code 1 when a round loses an acknowledged write or finds a bad chain or counter.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { type ServerProcess, startServer as startProcess, stopServer } from '../server-process';

const ADMIN = 'crash-test-admin-token-0123456789';

export interface CrashOptions {
  rounds: number;
  writers: number;
  tenants: number;
  /** Load runs this long (plus up to half again, at random) before the kill. */
  killAfterMs: number;
  /** Postgres URL; embedded when absent. */
  databaseUrl?: string;
  redisUrl?: string;
  log?: (line: string) => void;
}

export interface RoundReport {
  round: number;
  acknowledged: number;
  present: number;
  lost: number;
  /** Committed but never answered: the kill came between commit and response. */
  unacknowledged: number;
  sent: number;
  failedAnswers: Record<string, number>;
  auditValid: boolean;
  countersExact: boolean;
  problems: string[];
  loadMs: number;
}

export interface CrashReport {
  storage: 'embedded' | 'postgres';
  rounds: RoundReport[];
  lost: number;
  ok: boolean;
}

interface Tenant {
  id: string;
  key: string;
  acked: Set<string>;
  /** Authenticated requests answered (anything) and sent, for the api_calls bounds. */
  answered: number;
  sent: number;
}

const startServer = (env: Record<string, string>) =>
  startProcess(
    { ADMIN_TOKEN: ADMIN, LOG_LEVEL: 'warn', EMBEDDING_PROVIDER: 'hash', RATE_LIMIT_SCALE: '100', ...env },
    { timeoutMs: 90_000, keepOutput: 20_000 },
  );
type Server = ServerProcess;
const kill9 = (server: Server) => stopServer(server, 'SIGKILL');

async function stopGracefully(server: Server) {
  if (server.proc.exitCode !== null || server.proc.signalCode !== null) return;
  const exited = new Promise((res) => server.proc.once('exit', res));
  server.proc.kill('SIGTERM');
  await exited;
}

async function call(base: string, method: string, path: string, key: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: any = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = text;
  }
  return { status: res.status, body: parsed, text };
}

/** Authenticated request counted in the tenant's api_calls bounds. */
async function tenantCall(base: string, t: Tenant, method: string, path: string, body?: unknown) {
  t.sent++;
  const res = await call(base, method, path, t.key, body);
  t.answered++;
  return res;
}

export async function runCrashTest(opts: CrashOptions): Promise<CrashReport> {
  const log = opts.log ?? ((line: string) => console.log(line));
  const storage = opts.databaseUrl ? 'postgres' : 'embedded';
  const dataDir = opts.databaseUrl ? undefined : await mkdtemp(join(tmpdir(), 'engram-crash-'));
  const env: Record<string, string> = opts.databaseUrl
    ? { DATABASE_URL: opts.databaseUrl, ...(opts.redisUrl ? { REDIS_URL: opts.redisUrl } : {}) }
    : { DATA_DIR: dataDir! };
  const rounds: RoundReport[] = [];
  let server = await startServer(env);
  try {
    const tenants: Tenant[] = [];
    for (let i = 0; i < opts.tenants; i++) {
      const email = `crash-${crypto.randomUUID().slice(0, 12)}@example.com`;
      const res = await call(server.base, 'POST', '/admin/v1/tenants', ADMIN, { email, tier: 'pro' });
      if (res.status !== 201) throw new Error(`tenant creation failed: ${res.status} ${res.text}`);
      tenants.push({ id: res.body.tenant_id, key: res.body.api_key, acked: new Set(), answered: 0, sent: 0 });
    }
    for (let round = 1; round <= opts.rounds; round++) {
      const failedAnswers: Record<string, number> = {};
      let sent = 0;
      let acknowledged = 0;
      let stop = false;
      const started = Date.now();
      const writer = async (w: number) => {
        const t = tenants[w % tenants.length];
        for (let n = 0; !stop; n++) {
          sent++;
          t.sent++;
          let res: Response;
          try {
            res = await fetch(`${server.base}/v1/memories`, {
              method: 'POST',
              headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json' },
              body: JSON.stringify({
                observation: `crash round ${round} writer ${w} write ${n} ${crypto.randomUUID()}`,
                tags: [`w${w}`],
                auto_link: n % 4 === 0,
              }),
            });
          } catch {
            return; // the server is gone: this write was never acknowledged
          }
          let body: any;
          try {
            body = await res.json();
          } catch {
            return; // cut mid-answer: not acknowledged either
          }
          t.answered++;
          if (res.status === 201) {
            t.acked.add(body.uuid);
            acknowledged++;
          } else failedAnswers[res.status] = (failedAnswers[res.status] ?? 0) + 1;
        }
      };
      const load = Promise.all(Array.from({ length: opts.writers }, (_, w) => writer(w)));
      await new Promise((r) => setTimeout(r, opts.killAfterMs * (1 + Math.random() * 0.5)));
      const loadMs = Date.now() - started;
      await kill9(server);
      stop = true;
      await load;
      log(`round ${round}: killed -9 after ${loadMs} ms, ${acknowledged} writes acknowledged of ${sent} sent`);

      server = await startServer(env);
      const problems: string[] = [];
      let present = 0;
      let lost = 0;
      let unacknowledged = 0;
      let auditValid = true;
      let countersExact = true;
      for (const t of tenants) {
        const exported = await tenantCall(server.base, t, 'GET', '/v1/memories/export?format=json');
        if (exported.status !== 200 || !Array.isArray(exported.body)) {
          problems.push(`${t.id}: export answered ${exported.status}`);
          continue;
        }
        const ids = new Set<string>(exported.body.map((m: { uuid: string }) => m.uuid));
        const missing = [...t.acked].filter((id) => !ids.has(id));
        lost += missing.length;
        present += ids.size;
        unacknowledged += [...ids].filter((id) => !t.acked.has(id)).length;
        if (missing.length) problems.push(`${t.id}: ${missing.length} acknowledged memories missing, e.g. ${missing.slice(0, 3).join(', ')}`);

        const verify = await tenantCall(server.base, t, 'GET', '/v1/audit/verify');
        if (verify.status !== 200 || verify.body.valid !== true || verify.body.checked?.memories !== ids.size) {
          auditValid = false;
          problems.push(`${t.id}: audit verify ${verify.status} ${verify.text.slice(0, 500)}`);
        }
        const auditTotal = await tenantCall(server.base, t, 'GET', '/v1/audit?event_type=create&limit=1');
        if (auditTotal.body?.total !== undefined && auditTotal.body.total !== ids.size) {
          auditValid = false;
          problems.push(`${t.id}: ${auditTotal.body.total} create entries in the audit trail for ${ids.size} memories`);
        }

        const dashboard = await tenantCall(server.base, t, 'GET', '/v1/dashboard');
        const usage = await tenantCall(server.base, t, 'GET', '/v1/usage');
        const live = dashboard.body?.memory_count;
        const stored = usage.body?.memories?.current;
        const calls = usage.body?.api_calls?.current;
        // Every answered request was counted before its handler ran (this usage request included, which
        // counts itself); a request the kill cut off may or may not have been counted.
        const answered = t.answered;
        if (live !== ids.size || stored !== ids.size) {
          countersExact = false;
          problems.push(`${t.id}: ${ids.size} memories present, dashboard memory_count ${live}, usage memories ${stored}`);
        }
        if (!(typeof calls === 'number' && calls >= answered && calls <= t.sent)) {
          countersExact = false;
          problems.push(`${t.id}: api_calls ${calls} outside [answered ${answered}, sent ${t.sent}]`);
        }
      }
      const report: RoundReport = { round, acknowledged, present, lost, unacknowledged, sent, failedAnswers, auditValid, countersExact, problems, loadMs };
      rounds.push(report);
      log(
        `round ${round}: ${present} memories present, ${lost} acknowledged lost, ${unacknowledged} committed without an answer (all rounds so far); ` +
          `audit ${auditValid ? 'valid' : 'INVALID'}, counters ${countersExact ? 'exact' : 'WRONG'}` +
          (Object.keys(failedAnswers).length ? `; non-201 answers ${JSON.stringify(failedAnswers)}` : '') +
          (problems.length ? `\n  ${problems.join('\n  ')}` : ''),
      );
    }
  } catch (err) {
    log(`server output (tail):\n${server.output().slice(-4000)}`);
    throw err;
  } finally {
    await stopGracefully(server);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  }
  const lost = rounds.reduce((n, r) => n + r.lost, 0);
  return { storage, rounds, lost, ok: rounds.every((r) => r.lost === 0 && r.auditValid && r.countersExact && r.problems.length === 0) };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: process.env.CRASH_ROUNDS ?? '3' },
      writers: { type: 'string', default: process.env.CRASH_WRITERS ?? '32' },
      tenants: { type: 'string', default: process.env.CRASH_TENANTS ?? '4' },
      'kill-after-ms': { type: 'string', default: process.env.CRASH_KILL_AFTER_MS ?? '4000' },
      postgres: { type: 'boolean', default: false },
    },
  });
  const databaseUrl = process.env.DATABASE_URL ?? process.env.TEST_DATABASE_URL;
  if (values.postgres && !databaseUrl) {
    console.error('--postgres needs DATABASE_URL or TEST_DATABASE_URL');
    process.exit(2);
  }
  const report = await runCrashTest({
    rounds: Number(values.rounds),
    writers: Number(values.writers),
    tenants: Number(values.tenants),
    killAfterMs: Number(values['kill-after-ms']),
    databaseUrl: values.postgres || process.env.DATABASE_URL ? databaseUrl : undefined,
    redisUrl: process.env.REDIS_URL ?? process.env.TEST_REDIS_URL,
  });
  console.log(
    `${report.storage}: ${report.rounds.length} kill -9 rounds, ${report.rounds.reduce((n, r) => n + r.acknowledged, 0)} writes acknowledged, ${report.lost} lost; ${report.ok ? 'OK' : 'FAILED'}`,
  );
  process.exit(report.ok ? 0 : 1);
}
