import { type SQL, sql } from 'drizzle-orm';
import { type DbOrTx, pgArray, rows } from '../../shared/platform/data/db';
import { type PageInput, pageRows } from '../../shared/platform/data/pagination';
import type { AuditRow } from './schemas';

export const AUDIT_COLUMNS = sql.raw(
  'a.tenant_id, a.seq, a.id, a.created_at, a.operation, a.resource_type, a.resource_id, a.actor, a.request_id, a.metadata, a.prev_hash, a.entry_hash',
);

export interface Window {
  /** Inclusive lower bound: the later of `since` and the start of the retention window. */
  from: Date;
  /** Inclusive upper bound, if any. */
  until?: Date;
  /** Stored operation names to keep (none: every entry). */
  operations?: readonly string[];
}

/** The tenant's entries inside the window, as one WHERE clause over alias `a`. */
export function whereInWindow(tenantId: string, w: Window): SQL {
  const parts: SQL[] = [sql`a.tenant_id = ${tenantId}`, sql`a.created_at >= ${w.from.toISOString()}::timestamptz`];
  if (w.until) parts.push(sql`a.created_at <= ${w.until.toISOString()}::timestamptz`);
  if (w.operations) parts.push(sql`a.operation = ANY(${pgArray([...w.operations])}::text[])`);
  return sql.join(parts, sql` AND `);
}

/** A page, newest first (highest seq), and the total in the window. */
export function listPage(db: DbOrTx, where: SQL, page: PageInput) {
  return pageRows<AuditRow>(
    db,
    sql`SELECT ${AUDIT_COLUMNS} FROM audit_log a WHERE ${where} ORDER BY a.seq DESC`,
    sql`SELECT count(*) AS n FROM audit_log a WHERE ${where}`,
    page,
  );
}

/**
 * Up to `limit` entries after `afterSeq` in chain order (keyset on the primary key), with what the
 * chain hash covers; `created_at` as the ISO text the hash was computed over (milliseconds, `Z`).
 */
export function chainPage(db: DbOrTx, where: SQL, afterSeq: number, limit: number, maxSeq?: number) {
  const upTo = maxSeq === undefined ? sql`` : sql`AND a.seq <= ${maxSeq}`;
  return rows<AuditRow>(
    db,
    sql`SELECT a.tenant_id, a.seq, a.id, to_char(a.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at,
               a.operation, a.resource_type, a.resource_id, a.actor, a.request_id, a.metadata, a.prev_hash, a.entry_hash
        FROM audit_log a WHERE ${where} AND a.seq > ${afterSeq} ${upTo} ORDER BY a.seq LIMIT ${limit}`,
  );
}

export interface Head {
  seq: number;
  hash: string;
  first_seq: number;
  first_prev_hash: string;
}

export async function chainHead(db: DbOrTx, tenantId: string): Promise<Head | null> {
  const [head] = await rows<{ seq: string | number; hash: string; first_seq: string | number; first_prev_hash: string }>(
    db,
    sql`SELECT seq, hash, first_seq, first_prev_hash FROM audit_heads WHERE tenant_id = ${tenantId}`,
  );
  return head ? { seq: Number(head.seq), hash: head.hash, first_seq: Number(head.first_seq), first_prev_hash: head.first_prev_hash } : null;
}

export async function countByOperation(db: DbOrTx, where: SQL) {
  const found = await rows<{ operation: string; n: number | string }>(
    db,
    sql`SELECT a.operation, count(*) AS n FROM audit_log a WHERE ${where} GROUP BY a.operation`,
  );
  return found.map((f) => ({ operation: f.operation, count: Number(f.n) }));
}

/** Sums daily counters (buckets `YYYY-MM-DD`) of some metrics over an inclusive range of days. */
export async function sumDailyCounters(db: DbOrTx, tenantId: string, metrics: readonly string[], fromDay: string, toDay: string) {
  const found = await rows<{ metric: string; n: number | string }>(
    db,
    sql`SELECT metric, sum(value) AS n FROM usage_counters
        WHERE tenant_id = ${tenantId} AND metric = ANY(${pgArray([...metrics])}::text[]) AND bucket >= ${fromDay} AND bucket <= ${toDay}
        GROUP BY metric`,
  );
  return Object.fromEntries(found.map((f) => [f.metric, Number(f.n)])) as Record<string, number>;
}

/**
 * The tenant's memories, newest first, a keyset page at a time on (created_at, id) (the tenant's
 * created index), with only what the content check needs.
 */
export function memoryHashPage(db: DbOrTx, tenantId: string, after: { createdAt: string; id: string } | null, limit: number) {
  const cursor = after ? sql`AND (m.created_at, m.id) < (${after.createdAt}::timestamptz, ${after.id}::uuid)` : sql``;
  return rows<{ id: string; observation: string; content_hash: string; created_at: Date | string }>(
    db,
    sql`SELECT m.id, m.observation, m.content_hash, m.created_at FROM memories m
        WHERE m.tenant_id = ${tenantId} ${cursor} ORDER BY m.created_at DESC, m.id DESC LIMIT ${limit}`,
  );
}
