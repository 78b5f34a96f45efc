import { toUrn } from '../../shared/platform/contract/ids';
import { sql } from 'drizzle-orm';
import type { z } from '@hono/zod-openapi';
import { auditHashInput } from '../../shared/platform/data/audit';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { sha256Hex } from '../../shared/platform/contract/crypto';
import type { DbOrTx } from '../../shared/platform/data/db';
import type { Services } from '../../shared/platform/contract/services';
import * as q from './queries';
import type { AuditRow, IntegrityFailure } from './schemas';

/** Rows per read; the next page is read while this one is hashed. */
const PAGE = 5_000;
/** At most this many failures are listed (all are counted), so a wholesale tampering cannot blow up the answer. */
export const MAX_LISTED_FAILURES = 1_000;

type Failure = z.infer<typeof IntegrityFailure>;
type Report = (f: Failure) => void;

/**
 * SHA-256 hex of many texts: the runtime's synchronous one-shot hash where there is one (Node),
 * else WebCrypto, all digests of a page in flight together (they do not depend on each other: an
 * entry's hash covers its own stored prev_hash, and the links are compared separately).
 */
function hasher(services: Services) {
  const sync = services.hashSecret;
  return {
    many: (texts: string[]): string[] | Promise<string[]> => (sync ? texts.map(sync) : Promise.all(texts.map(sha256Hex))),
  };
}

const canonicalOf = (r: AuditRow) =>
  auditHashInput({
    id: r.id,
    tenant_id: r.tenant_id,
    seq: Number(r.seq),
    // Read as ISO text (`chainPage`): no Date to parse and print again per entry.
    created_at: typeof r.created_at === 'string' ? r.created_at : r.created_at.toISOString(),
    operation: r.operation,
    resource_type: r.resource_type,
    resource_id: r.resource_id,
    actor: r.actor,
    metadata: r.metadata ?? {},
  });

/** Every memory of the tenant (live or not yet purged): sha256(observation) against content_hash. */
async function verifyMemories(db: DbOrTx, tenantId: string, hash: ReturnType<typeof hasher>, report: Report) {
  let checked = 0;
  let next = q.memoryHashPage(db, tenantId, null, PAGE);
  for (;;) {
    const page = await next;
    const last = page[page.length - 1];
    if (page.length === PAGE) next = q.memoryHashPage(db, tenantId, { createdAt: new Date(last.created_at).toISOString(), id: last.id }, PAGE);
    const actual = await hash.many(page.map((m) => m.observation));
    page.forEach((m, i) => {
      if (actual[i] !== m.content_hash) report({ kind: 'memory_hash', id: toUrn(m.id), expected: actual[i], actual: m.content_hash });
    });
    checked += page.length;
    if (page.length < PAGE) return checked;
  }
}

/**
 * The tenant's retained chain, in seq order from the head's `first_seq` (whose prev_hash must be
 * `first_prev_hash`) to the head's `seq`/`hash` as read at the start: every seq present once
 * (`audit_gap`), every prev_hash equal to the stored entry_hash before it (`audit_link`), every
 * entry_hash recomputed from its own prev_hash and fields (`audit_hash`), and the head agreeing
 * with the last entry (`audit_head`). One tampered row is named once: a changed field fails only
 * that row's hash, a changed entry_hash also the next row's link. Entries appended while this
 * runs are not part of the run; a retention prune that moves the start meanwhile is followed.
 */
export async function verifyChain(db: DbOrTx, tenantId: string, hash: ReturnType<typeof hasher>, report: Report) {
  const head = await q.chainHead(db, tenantId);
  const where = sql`a.tenant_id = ${tenantId}`;
  if (!head) {
    // No entry was ever appended through the head; any row is a stray.
    const stray = await q.chainPage(db, where, 0, 1);
    for (const r of stray)
      report({ kind: 'audit_head', id: r.id, seq: Number(r.seq), expected: 'no entries (no chain head)', actual: `entry at seq ${r.seq}` });
    return stray.length;
  }
  /** The start moved forward since we looked: every entry before `seq` was pruned. */
  const prunedUpTo = async (seq: number) => {
    const fresh = await q.chainHead(db, tenantId);
    return fresh && fresh.first_seq === seq ? fresh : null;
  };
  let expectedSeq = head.first_seq;
  let expectedPrev = head.first_prev_hash;
  let checked = 0;
  let lastId: string | null = null;
  let next = q.chainPage(db, where, 0, PAGE, head.seq);
  for (;;) {
    const page = await next;
    if (page.length === PAGE) next = q.chainPage(db, where, Number(page[page.length - 1].seq), PAGE, head.seq);
    const recomputed = await hash.many(page.map((r) => r.prev_hash + canonicalOf(r)));
    for (const [i, r] of page.entries()) {
      checked += 1;
      const seq = Number(r.seq);
      if (seq < expectedSeq) {
        report({ kind: 'audit_gap', id: r.id, seq, expected: `seq >= ${expectedSeq}`, actual: String(seq) });
        continue;
      }
      let linked = true;
      if (seq > expectedSeq) {
        const moved = await prunedUpTo(seq);
        if (moved) expectedPrev = moved.first_prev_hash;
        else {
          report({ kind: 'audit_gap', id: r.id, seq, expected: String(expectedSeq), actual: String(seq) });
          linked = false; // the missing entries explain the broken link; do not report it twice
        }
      }
      if (linked && r.prev_hash !== expectedPrev) report({ kind: 'audit_link', id: r.id, seq, expected: expectedPrev, actual: r.prev_hash });
      if (recomputed[i] !== r.entry_hash) report({ kind: 'audit_hash', id: r.id, seq, expected: recomputed[i], actual: r.entry_hash });
      expectedSeq = seq + 1;
      expectedPrev = r.entry_hash;
      lastId = r.id;
    }
    if (page.length < PAGE) break;
  }
  const name = lastId ?? 'audit_head';
  if (expectedSeq <= head.seq) {
    // Entries up to the head's seq are missing at the end, unless a prune removed them all meanwhile.
    const fresh = await q.chainHead(db, tenantId);
    if (!(fresh && fresh.first_seq > head.seq)) {
      report({ kind: 'audit_head', id: name, seq: head.seq, expected: String(expectedSeq - 1), actual: String(head.seq) });
    }
  } else if (expectedPrev !== head.hash) {
    report({ kind: 'audit_head', id: name, seq: head.seq, expected: expectedPrev, actual: head.hash });
  }
  return checked;
}

/** GET /v1/audit/verify: both checks, constant memory (pages of 1000), every failure counted. */
export async function verify(ctx: TenantCtx) {
  const { services, now, tenantId } = ctx;
  const failures: Failure[] = [];
  let failureCount = 0;
  const report: Report = (f) => {
    failureCount += 1;
    if (failures.length < MAX_LISTED_FAILURES) failures.push(f);
  };
  const hash = hasher(services);
  const memories = await verifyMemories(ctx.db, tenantId, hash, report);
  const auditEntries = await verifyChain(ctx.db, tenantId, hash, report);
  return {
    valid: failureCount === 0,
    timestamp: now.toISOString(),
    checked: { memories, audit_entries: auditEntries },
    integrity_failures: failures,
    failure_count: failureCount,
  };
}
