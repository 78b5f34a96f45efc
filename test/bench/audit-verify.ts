/**
 * Audit chain verify speed (`GET /v1/audit/verify`), through the app in process.
 *
 *   npx tsx test/bench/audit-verify.ts [--entries 100000] [--first 0] [--runs 3]
 *
 * One tenant's chain is appended with SQL in chunks of 1,000 entries (the statement appendAudit
 * runs, so hashes are computed exactly as a write computes them; metadata shaped like a memory
 * store's). With `--first`, the chain is verified `--runs` times at that length before it grows
 * to `--entries`. Then verify runs `--runs` times; beside it, in the same run, a plain read of the same
 * rows in the same pages (the floor set by the database and driver) and the hashing alone over rows
 * already in memory. Embedded PGlite by default; `DATABASE_URL` for Postgres. The process's RSS is
 * sampled every 50 ms during each step (the engram app runs in this process): verify pages through
 * the chain, so its peak should not grow with the chain, where the plain read keeps every row.
 */
import { sql } from 'drizzle-orm';
import { createHash } from 'node:crypto';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { auditHashInput, auditRow, chainSql } from '../../shared/platform/data/audit';
import { rows } from '../../shared/platform/data/db';
import { f0, f1, inProcessEngram, table } from './lib';

const { values: args } = parseArgs({
  options: { entries: { type: 'string', default: '100000' }, first: { type: 'string', default: '0' }, runs: { type: 'string', default: '3' } },
});
const ENTRIES = Number(args.entries);
const FIRST = Number(args.first);
const RUNS = Number(args.runs);
if (!(ENTRIES > 0) || !(FIRST >= 0 && FIRST < ENTRIES) || !(RUNS > 0)) throw new Error('need entries > 0, 0 <= first < entries, runs > 0');

// A full collection before each step, so the garbage of the one before does not count in its peak.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const MB = (bytes: number) => Math.round(bytes / 2 ** 20);
const load = () => loadavg()[0].toFixed(1);

/** `fn` timed, with the process's RSS before it and at its peak (50 ms samples). */
async function sampled<T>(fn: () => Promise<T>) {
  gc();
  const base = process.memoryUsage.rss();
  let peak = base;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 50);
  const t0 = performance.now();
  try {
    const out = await fn();
    peak = Math.max(peak, process.memoryUsage.rss());
    return { out, ms: performance.now() - t0, base, peak };
  } finally {
    clearInterval(timer);
  }
}

const e = await inProcessEngram();
const db = e.node.services.db;
const t = await e.newTenant('enterprise');
const at = new Date();
/** Entries `from` to `to` of the chain appended. */
async function append(from: number, to: number) {
  const started = performance.now();
  for (let done = from; done < to; done += 1000) {
    const chunk = Array.from({ length: Math.min(1000, to - done) }, (_, i) =>
      auditRow({
        tenantId: t.tenant_id,
        operation: 'memory.create',
        resourceType: 'memory',
        resourceId: `urn:uuid:0193${String(done + i).padStart(28, '0')}`,
        actor: 'key_bench',
        requestId: 'req_bench',
        at: new Date(at.getTime() + done + i),
        metadata: {
          hash: createHash('sha256')
            .update(String(done + i))
            .digest('hex'),
          agent_id: 'bench-agent',
          conflict: false,
          superseded: [],
        },
      }),
    );
    await db.execute(sql`WITH RECURSIVE ${sql.join(chainSql('a', t.tenant_id, chunk), sql`, `)} SELECT count(*) FROM a_log`);
  }
  console.error(`appended ${to - from} entries in ${f1((performance.now() - started) / 1000)} s (load average ${load()})`);
}

type Run = { ms: number; base: number; peak: number; load: string };
async function verifyRuns(length: number) {
  const out: Run[] = [];
  for (let r = 0; r < RUNS; r++) {
    const run = await sampled(() => e.call('GET', '/v1/audit/verify', t.api_key));
    const res = run.out;
    out.push({ ...run, load: load() });
    if (!res.valid || res.checked.audit_entries < length) throw new Error(`verify: ${JSON.stringify(res).slice(0, 300)}`);
  }
  return out;
}

let firstRuns: Run[] = [];
if (FIRST > 0) {
  await append(0, FIRST);
  firstRuns = await verifyRuns(FIRST);
}
await append(FIRST, ENTRIES);
const fullRuns = await verifyRuns(ENTRIES);

// The floor: the same rows read in the same pages, nothing computed (and every row kept, for the hashing).
const readRuns: Run[] = [];
const hashMs: number[] = [];
for (let r = 0; r < RUNS; r++) {
  const read = await sampled(async () => {
    let after = 0;
    const all: Record<string, any>[] = [];
    for (;;) {
      const page = await rows<Record<string, any>>(
        db,
        sql`SELECT tenant_id, seq, id, created_at, operation, resource_type, resource_id, actor, metadata, prev_hash, entry_hash
            FROM audit_log WHERE tenant_id = ${t.tenant_id} AND seq > ${after} ORDER BY seq LIMIT 5000`,
      );
      for (const row of page) all.push(row);
      if (page.length < 5000) break;
      after = Number(page[page.length - 1].seq);
    }
    return all;
  });
  readRuns.push({ ...read, load: load() });
  const t1 = performance.now();
  for (const a of read.out) {
    const text = auditHashInput({
      id: a.id,
      tenant_id: a.tenant_id,
      seq: Number(a.seq),
      created_at: new Date(a.created_at).toISOString(),
      operation: a.operation,
      resource_type: a.resource_type,
      resource_id: a.resource_id,
      actor: a.actor,
      metadata: a.metadata,
    });
    if (
      createHash('sha256')
        .update(a.prev_hash + text)
        .digest('hex') !== a.entry_hash
    )
      throw new Error('hash mismatch');
  }
  hashMs.push(performance.now() - t1);
}
const rate = (ms: number, n = ENTRIES) => f0(n / (ms / 1000));
const best = (xs: Run[]) => xs.reduce((a, b) => (b.ms < a.ms ? b : a));
const memory = (xs: Run[]) => `${MB(Math.min(...xs.map((x) => x.base)))} / ${MB(Math.max(...xs.map((x) => x.peak)))}`;
console.log(
  `\n### Audit verify, ${ENTRIES.toLocaleString('en')} entries (${e.node.services.storage ?? (process.env.DATABASE_URL ? 'postgres' : 'embedded')}), best of ${RUNS}\n`,
);
const v = best(fullRuns);
const rd = best(readRuns);
const hashBest = Math.min(...hashMs);
const short = firstRuns.length ? best(firstRuns) : null;
console.log(
  table(
    ['what', 'seconds', 'entries/s', 'process RSS before / peak MB', 'load average'],
    [
      ...(short
        ? [[`GET /v1/audit/verify at ${FIRST.toLocaleString('en')} entries`, f1(short.ms / 1000), rate(short.ms, FIRST), memory(firstRuns), short.load]]
        : []),
      ['GET /v1/audit/verify (chain + memories, here none)', f1(v.ms / 1000), rate(v.ms), memory(fullRuns), v.load],
      ['read the rows alone, pages of 5,000 (all kept)', f1(rd.ms / 1000), rate(rd.ms), memory(readRuns), rd.load],
      ['canonical JSON + SHA-256 alone, rows in memory', f1(hashBest / 1000), rate(hashBest), '', ''],
    ],
  ),
);
console.log(
  `runs (s): verify ${firstRuns.length ? `${firstRuns.map((x) => f1(x.ms / 1000)).join(', ')} at ${FIRST}; ` : ''}${fullRuns.map((x) => f1(x.ms / 1000)).join(', ')}; read ${readRuns.map((x) => f1(x.ms / 1000)).join(', ')}`,
);
await e.node.close();
process.exit(0);
