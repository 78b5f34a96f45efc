/**
 * Audit chain verify speed (`GET /v1/audit/verify`), through the app in process.
 *
 *   npx tsx test/bench/audit-verify.ts [--entries 100000] [--runs 3]
 *
 * One tenant's chain is appended with SQL in chunks of 1,000 entries (the statement appendAudit
 * runs, so hashes are computed exactly as a write computes them; metadata shaped like a memory
 * store's). Then verify runs `--runs` times; beside it, in the same run, a plain read of the same
 * rows in the same pages (the floor set by the database and driver) and the hashing alone over rows
 * already in memory. Embedded PGlite by default; `DATABASE_URL` for Postgres.
 */
import { sql } from 'drizzle-orm';
import { parseArgs } from 'node:util';
import { createHash } from 'node:crypto';
import { auditHashInput, auditRow, chainSql } from '../../shared/platform/audit';
import { rows } from '../../shared/platform/db';
import { f0, f1, inProcessEngram, table } from './lib';

const { values: args } = parseArgs({ options: { entries: { type: 'string', default: '100000' }, runs: { type: 'string', default: '3' } } });
const ENTRIES = Number(args.entries);
const RUNS = Number(args.runs);

const e = await inProcessEngram();
const db = e.node.services.db;
const t = await e.newTenant('enterprise');
const started = performance.now();
const at = new Date();
for (let done = 0; done < ENTRIES; done += 1000) {
  const chunk = Array.from({ length: Math.min(1000, ENTRIES - done) }, (_, i) =>
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
console.error(`appended ${ENTRIES} entries in ${f1((performance.now() - started) / 1000)} s`);

const verifyMs: number[] = [];
for (let r = 0; r < RUNS; r++) {
  const t0 = performance.now();
  const res = await e.call('GET', '/v1/audit/verify', t.api_key);
  verifyMs.push(performance.now() - t0);
  if (!res.valid || (res.checked.audit_entries !== ENTRIES + 0 && res.checked.audit_entries < ENTRIES))
    throw new Error(`verify: ${JSON.stringify(res).slice(0, 300)}`);
}

// The floor: the same rows read in the same pages, nothing computed.
const readMs: number[] = [];
const hashMs: number[] = [];
for (let r = 0; r < RUNS; r++) {
  const t0 = performance.now();
  let after = 0;
  const all: Record<string, any>[] = [];
  for (;;) {
    const page = await rows<Record<string, any>>(
      db,
      sql`SELECT tenant_id, seq, id, created_at, operation, resource_type, resource_id, actor, metadata, prev_hash, entry_hash
          FROM audit_log WHERE tenant_id = ${t.tenant_id} AND seq > ${after} ORDER BY seq LIMIT 5000`,
    );
    all.push(...page);
    if (page.length < 5000) break;
    after = Number(page[page.length - 1].seq);
  }
  readMs.push(performance.now() - t0);
  const t1 = performance.now();
  for (const a of all) {
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
const rate = (ms: number) => f0(ENTRIES / (ms / 1000));
const best = (xs: number[]) => Math.min(...xs);
console.log(
  `\n### Audit verify, ${ENTRIES.toLocaleString('en')} entries (${e.node.services.storage ?? (process.env.DATABASE_URL ? 'postgres' : 'embedded')}), best of ${RUNS}\n`,
);
console.log(
  table(
    ['what', 'seconds', 'entries/s'],
    [
      ['GET /v1/audit/verify (chain + memories, here none)', f1(best(verifyMs) / 1000), rate(best(verifyMs))],
      ['read the rows alone, pages of 5,000', f1(best(readMs) / 1000), rate(best(readMs))],
      ['canonical JSON + SHA-256 alone, rows in memory', f1(best(hashMs) / 1000), rate(best(hashMs))],
    ],
  ),
);
console.log(`runs (s): verify ${verifyMs.map((x) => f1(x / 1000)).join(', ')}`);
await e.node.close();
process.exit(0);
