import { sql } from 'drizzle-orm';
import { type Db, pgArray, type RawQuery, rows } from './db';

export interface CounterHit {
  tenantId: string;
  metric: string;
  bucket: string;
  /** `null`: count without a ceiling. */
  limit: number | null;
  /** Rows with an expiry (request windows) are purged by maintenance. */
  expiresAt?: Date | null;
  /** Other counters of the same tenant to read in the same statement (usage reports). */
  alsoRead?: { metric: string; bucket: string }[];
}

export interface CounterOutcome {
  allowed: boolean;
  /** The counter after this hit (unchanged when the hit was refused). */
  value: number;
  /** `alsoRead` counters as of this batch, keyed `metric|bucket` (0 when absent). */
  readings: Record<string, number>;
}

export const readingKey = (metric: string, bucket: string) => `${metric}|${bucket}`;

interface Waiter {
  hit: CounterHit;
  resolve: (o: CounterOutcome) => void;
  reject: (e: unknown) => void;
}

interface ReadWaiter {
  tenantId: string;
  wanted: { metric: string; bucket: string }[];
  resolve: (values: number[]) => void;
  reject: (e: unknown) => void;
}

/** A macrotask boundary (setImmediate on Node, a zero timeout elsewhere). */
const nextTick = () =>
  new Promise<void>((resolve) => ((globalThis as { setImmediate?: (f: () => void) => void }).setImmediate ?? ((f) => setTimeout(f, 0)))(resolve));

const rowKey = (h: CounterHit) => `${h.tenantId}\u0000${h.metric}\u0000${h.bucket}`;

/**
 * One statement per batch: a multi-row upsert (rows in key order, so instances lock in the same
 * order and cannot deadlock) plus the read of the `alsoRead` counters. Each row carries its hit
 * count and ceiling; the update grants as many hits as fit and stores that number in `last_grant`,
 * so the caller also learns the old value (`xmax = 0` marks a row the statement created).
 */
function upsertStatement(rowCount: number): string {
  const values = Array.from({ length: rowCount }, (_, i) => {
    const p = (k: number) => `$${i * 6 + k}`;
    return `(${p(1)}, ${p(2)}, ${p(3)}, LEAST(${p(4)}::bigint, coalesce(${p(5)}::bigint, ${p(4)}::bigint)), ${p(4)}::bigint, ${p(5)}::bigint, ${p(6)}::timestamptz)`;
  });
  const grant = 'CASE WHEN EXCLUDED.last_limit IS NULL THEN EXCLUDED.last_grant ELSE LEAST(EXCLUDED.last_grant, GREATEST(0, EXCLUDED.last_limit - u.value)) END';
  const upsert = `INSERT INTO usage_counters AS u (tenant_id, metric, bucket, value, last_grant, last_limit, expires_at)
    VALUES ${values.join(', ')}
    ON CONFLICT (tenant_id, metric, bucket) DO UPDATE SET last_grant = ${grant}, value = u.value + ${grant}, last_limit = EXCLUDED.last_limit
    RETURNING u.tenant_id, u.metric, u.bucket, u.value, u.last_grant, (u.xmax = 0) AS inserted`;
  return upsert;
}

const READ = `
  SELECT tenant_id, metric, bucket, value FROM usage_counters
  WHERE tenant_id = ANY($1::text[]) AND metric = ANY($2::text[]) AND bucket = ANY($3::text[])`;

/**
 * Durable, exact counters with a ceiling (monthly quotas, request windows).
 *
 * Group commit: while one flush is in the database, new hits queue up and go together in the next
 * one, so a busy server does one transaction for many requests and an idle one adds no delay. A
 * flush locks the rows it touches (in key order, so instances cannot deadlock) and decides every
 * hit from the locked values, so several instances stay exact. A request is answered only after
 * its increment committed: a crash loses nothing that was answered and counts nothing twice.
 * On Workers each request owns its connection, so `batching` is off there.
 */
export class CounterStore {
  private pending: Waiter[] = [];
  private pendingReads: ReadWaiter[] = [];
  private flushing: Promise<void> | null = null;

  constructor(
    private readonly db: Db,
    private readonly query: RawQuery,
    private readonly batching = true,
  ) {}

  consume(hit: CounterHit): Promise<CounterOutcome> {
    return new Promise((resolve, reject) => {
      const waiter = { hit, resolve, reject };
      if (!this.batching) {
        void this.flush([waiter]);
        return;
      }
      this.pending.push(waiter);
      this.flushing ??= this.drain();
    });
  }

  /** Resolves once everything queued so far is committed (tests, shutdown). */
  async settle(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  private async drain(): Promise<void> {
    // Let the requests already in the event loop's queues join this batch. An embedded database
    // answers synchronously, so without a macrotask pause every batch would hold one request.
    await nextTick();
    while (this.pending.length || this.pendingReads.length) {
      const batch = this.pending;
      this.pending = [];
      if (batch.length) await this.flush(batch);
      const reads = this.pendingReads;
      this.pendingReads = [];
      if (reads.length) await this.readBatch(reads);
    }
    this.flushing = null;
  }

  /**
   * A batch is one multi-row upsert (see `upsertStatement`) and, when asked for, one read of the
   * `alsoRead` counters. Plain VALUES lists plan several times faster in PGlite than unnest()
   * arrays or a CTE joining the read to the upsert (measured: 1.3 ms against 0.15 ms a statement).
   */
  private async flush(batch: Waiter[]): Promise<void> {
    try {
      const byRow = new Map<string, Waiter[]>();
      for (const w of batch) {
        const key = rowKey(w.hit);
        const list = byRow.get(key);
        if (list) list.push(w);
        else byRow.set(key, [w]);
      }
      const keys = [...byRow.keys()].sort();
      const params: unknown[] = [];
      for (const key of keys) {
        const waiters = byRow.get(key)!;
        const hit = waiters[0].hit;
        // A row's waiters share one ceiling: the tenant's tier at the moment of the batch.
        params.push(hit.tenantId, hit.metric, hit.bucket, waiters.length, waiters[waiters.length - 1].hit.limit, hit.expiresAt?.toISOString() ?? null);
      }
      const reads = [...new Set(batch.flatMap((w) => (w.hit.alsoRead ?? []).map((x) => rowKey({ tenantId: w.hit.tenantId, ...x, limit: null }))))]
        .filter((k) => !byRow.has(k))
        .map((k) => k.split('\u0000'));
      const result = await this.query<{ tenant_id: string; metric: string; bucket: string; value: string | number; last_grant: string | number; inserted: boolean }>(
        upsertStatement(keys.length),
        params,
      );
      if (reads.length) {
        const found = await this.query<{ tenant_id: string; metric: string; bucket: string; value: string | number }>(
          READ,
          [0, 1, 2].map((i) => pgArray([...new Set(reads.map((r) => r[i]))])),
        );
        result.push(...found.map((f) => ({ ...f, last_grant: 0, inserted: false })));
      }
      const final = new Map<string, number>();
      const granted = new Map<string, number>();
      for (const r of result) {
        const key = rowKey({ tenantId: r.tenant_id, metric: r.metric, bucket: r.bucket, limit: null });
        final.set(key, Number(r.value));
        if (byRow.has(key)) granted.set(key, r.inserted ? Number(r.value) : Number(r.last_grant));
      }
      for (const [key, waiters] of byRow) {
        const grant = granted.get(key)!;
        let value = final.get(key)! - grant;
        waiters.forEach((w, i) => {
          const allowed = i < grant;
          if (allowed) value += 1;
          const readings: Record<string, number> = {};
          for (const x of w.hit.alsoRead ?? []) readings[readingKey(x.metric, x.bucket)] = final.get(rowKey({ tenantId: w.hit.tenantId, ...x, limit: null })) ?? 0;
          w.resolve({ allowed, value, readings });
        });
      }
    } catch (err) {
      for (const w of batch) w.reject(err);
    }
  }

  /** Current values of some metrics in one bucket each, for usage reports; batched like writes. */
  read(tenantId: string, wanted: { metric: string; bucket: string }[]): Promise<number[]> {
    if (!wanted.length) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      const waiter = { tenantId, wanted, resolve, reject };
      if (!this.batching) {
        void this.readBatch([waiter]);
        return;
      }
      this.pendingReads.push(waiter);
      this.flushing ??= this.drain();
    });
  }

  private async readBatch(batch: ReadWaiter[]): Promise<void> {
    try {
      const keys = batch.flatMap((r) => r.wanted.map((w) => ({ tenantId: r.tenantId, ...w })));
      const found = await rows<{ tenant_id: string; metric: string; bucket: string; value: string | number }>(
        this.db,
        sql`
        SELECT u.tenant_id, u.metric, u.bucket, u.value FROM usage_counters u
        JOIN unnest(${pgArray(keys.map((k) => k.tenantId))}::text[], ${pgArray(keys.map((k) => k.metric))}::text[],
                    ${pgArray(keys.map((k) => k.bucket))}::text[]) AS r(t, m, b)
          ON u.tenant_id = r.t AND u.metric = r.m AND u.bucket = r.b`,
      );
      const values = new Map(found.map((f) => [rowKey({ tenantId: f.tenant_id, metric: f.metric, bucket: f.bucket, limit: null }), Number(f.value)]));
      for (const r of batch) {
        r.resolve(r.wanted.map((w) => values.get(rowKey({ tenantId: r.tenantId, ...w, limit: null })) ?? 0));
      }
    } catch (err) {
      for (const r of batch) r.reject(err);
    }
  }
}
