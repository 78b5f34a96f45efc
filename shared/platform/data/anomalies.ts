import { type SQL } from 'drizzle-orm';
import { sql } from './db';
import { type DbOrTx, rows } from './db';
import type { Work } from './unit-of-work';

/**
 * Anomaly signals (docs/architecture.md#anomalies): a tenant doing something unusual in a short,
 * fixed window. Each kind is counted per tenant in fixed 60-second windows aligned to the clock
 * (12:00:00-12:00:59.999, ...); the change or response that brings a window's count to its
 * threshold emits the event, so a window emits at most one event of a kind for a tenant, however
 * far past the threshold it goes. Each one is also an audit entry (`anomaly.<kind>`, resource type
 * `tenant`, actor `system`), so the audit summary counts them.
 *
 * | kind | counts, per tenant | threshold in 60 s |
 * |---|---|---|
 * | bulk_delete | memories deleted (`delete` memory events) | 50 |
 * | rapid_writes | memories created or changed (`create` and `update` memory events) | 500 |
 * | server_errors | authenticated responses with status ≥ 500 | 10 |
 *
 * Not counted: a rollback (one deliberate, audited, quota-limited operation with its own
 * `rollback.completed` event, whatever it removes), TTL expiry (the system's own deletes), recalls
 * and links. Memory changes count in the tenant whose store they change (a write through a share
 * counts for the owner).
 */
export const ANOMALY_KINDS = ['bulk_delete', 'rapid_writes', 'server_errors'] as const;
export type AnomalyKind = (typeof ANOMALY_KINDS)[number];

export const ANOMALY_WINDOW_SECONDS = 60;
export const ANOMALY_THRESHOLDS: Readonly<Record<AnomalyKind, number>> = {
  bulk_delete: 50,
  rapid_writes: 500,
  server_errors: 10,
};

const WINDOW_MS = ANOMALY_WINDOW_SECONDS * 1000;

/** The usage_counters row of a kind's window: metric `anomaly:<kind>`, bucket the window start. */
export function anomalyWindow(kind: AnomalyKind, now: Date) {
  const start = Math.floor(now.getTime() / WINDOW_MS) * WINDOW_MS;
  return {
    metric: `anomaly:${kind}`,
    start: new Date(start),
    bucket: new Date(start).toISOString(),
    // Kept one window past its end, then purged with the other expired counters by maintenance.
    expiresAt: new Date(start + 2 * WINDOW_MS),
  };
}

/** True when a count that went from `after - added` to `after` reached the threshold with this step. */
export const crossed = (kind: AnomalyKind, after: number, added: number) => after - added < ANOMALY_THRESHOLDS[kind] && after >= ANOMALY_THRESHOLDS[kind];

/**
 * The event and its audit entry, through `work` (whose actor is `system`), in the tenant's chain.
 * Data: `{window_start, window_end, window_seconds, count, threshold, request_id}`; `count` is the
 * window's count when the threshold was reached (a single bulk change may take it past).
 */
export async function recordAnomaly(
  work: Pick<Work, 'audit' | 'event'>,
  a: { tenantId: string; kind: AnomalyKind; now: Date; count: number; requestId: string | null },
): Promise<void> {
  const window = anomalyWindow(a.kind, a.now);
  const data = {
    window_start: window.bucket,
    window_end: new Date(window.start.getTime() + WINDOW_MS).toISOString(),
    window_seconds: ANOMALY_WINDOW_SECONDS,
    count: a.count,
    threshold: ANOMALY_THRESHOLDS[a.kind],
    request_id: a.requestId,
  };
  await work.audit({ tenantId: a.tenantId, operation: `anomaly.${a.kind}`, resourceType: 'tenant', resourceId: a.tenantId, metadata: data });
  await work.event(`anomaly.${a.kind}`, data, { tenantId: a.tenantId });
}

/** Memory changes of one transaction, per tenant and counted kind. */
export type MemoryChangeTally = Map<string, { bulk_delete: number; rapid_writes: number }>;

const kindOfMemoryEvent: Partial<Record<string, 'bulk_delete' | 'rapid_writes'>> = {
  delete: 'bulk_delete',
  create: 'rapid_writes',
  update: 'rapid_writes',
};

/** Adds a transaction's memory events to its tally (cheap: runs on every memory write). */
export function tallyMemoryChanges(tally: MemoryChangeTally, events: readonly { tenantId: string; kind: string }[]): void {
  for (const e of events) {
    const kind = kindOfMemoryEvent[e.kind];
    if (!kind) continue;
    let counts = tally.get(e.tenantId);
    if (!counts) tally.set(e.tenantId, (counts = { bulk_delete: 0, rapid_writes: 0 }));
    counts[kind] += 1;
  }
}

/**
 * The rule of an anomaly window's counter, as one statement: `n` more in the window of `now`, the
 * row expiring with the window; RETURNING the new count. `from`: a relation to read first (one row),
 * so a caller's WITH takes its locks in its order.
 */
export const anomalyCounterSql = (tenantId: string, kind: AnomalyKind, now: Date, n: number, from?: SQL) => {
  const window = anomalyWindow(kind, now);
  return sql`INSERT INTO usage_counters (tenant_id, metric, bucket, value, expires_at)
    SELECT ${tenantId}, ${window.metric}, ${window.bucket}, ${n}::bigint, ${window.expiresAt.toISOString()}::timestamptz ${from ? sql`FROM ${from}` : sql``}
    ON CONFLICT (tenant_id, metric, bucket) DO UPDATE SET value = usage_counters.value + EXCLUDED.value
    RETURNING value`;
};

/**
 * Counts a transaction's memory changes in their windows, in that transaction, and records the
 * anomaly whose threshold this transaction reaches. Counting in the write's own transaction makes
 * it exact: only committed changes count, a transaction that runs again after a deadlock counts
 * once, and the row lock on the window's counter orders concurrent writers, so exactly one of them
 * sees the count reach the threshold, and its event commits with its change or not at all. The
 * rows are taken in key order, after everything else the write locked (the tenant's audit head
 * first, as every memory write takes it).
 */
export async function countMemoryChanges(
  tx: DbOrTx,
  tally: MemoryChangeTally,
  now: Date,
  record: (tenantId: string, kind: AnomalyKind, count: number) => Promise<void>,
): Promise<void> {
  const hits: { tenantId: string; kind: AnomalyKind; n: number }[] = [];
  for (const [tenantId, counts] of tally) {
    for (const kind of ['bulk_delete', 'rapid_writes'] as const) if (counts[kind]) hits.push({ tenantId, kind, n: counts[kind] });
  }
  hits.sort((a, b) => (a.tenantId === b.tenantId ? a.kind.localeCompare(b.kind) : a.tenantId < b.tenantId ? -1 : 1));
  for (const hit of hits) {
    const [row] = await rows<{ value: string | number }>(tx, anomalyCounterSql(hit.tenantId, hit.kind, now, hit.n));
    const count = Number(row.value);
    if (crossed(hit.kind, count, hit.n)) await record(hit.tenantId, hit.kind, count);
  }
}
