import { pgArray, type RawQuery } from './db';

export interface CounterHit {
  tenantId: string;
  metric: string;
  bucket: string;
  /** `null`: count without a ceiling. */
  limit: number | null;
  /** Rows with an expiry (request windows) are purged by maintenance. */
  expiresAt?: Date | null;
  /** Other counters of the same tenant to read in the same statement (usage reports). */
  alsoRead?: readonly { metric: string; bucket: string }[];
}

export interface CounterOutcome {
  allowed: boolean;
  /** The counter after this hit (unchanged when the hit was refused). */
  value: number;
  /**
   * An `alsoRead` counter of the hit's tenant as of this batch (0 when absent); undefined when this
   * count did not read it (the Redis gate reads only its own counters), so the caller reads it.
   */
  reading(metric: string, bucket: string): number | undefined;
}

interface Waiter {
  hit: CounterHit;
  resolve: (o: CounterOutcome) => void;
  reject: (e: unknown) => void;
}

interface ReadWaiter {
  tenantId: string;
  wanted: readonly { metric: string; bucket: string }[];
  resolve: (values: number[]) => void;
  reject: (e: unknown) => void;
}

/** A macrotask boundary (setImmediate on Node, a zero timeout elsewhere). */
const nextTick = () =>
  new Promise<void>((resolve) => ((globalThis as { setImmediate?: (f: () => void) => void }).setImmediate ?? ((f) => setTimeout(f, 0)))(resolve));

const rowKey = (tenantId: string, metric: string, bucket: string) => `${tenantId}\u0000${metric}\u0000${bucket}`;

/**
 * One statement per batch, whatever its size: a multi-row upsert of the hit rows (arrays $1-$6,
 * in key order, so instances lock in the same order and cannot deadlock) and, in the same
 * snapshot, the read of the `alsoRead` counters (arrays $7-$9: tenants, metrics, buckets, whose
 * combinations may over-read; the caller ignores what it did not ask for). Each hit row carries
 * its hit count and ceiling; the update grants as many hits as fit and stores that number in
 * `last_grant`, so the caller also learns the old value (`xmax = 0` marks a row the statement
 * created). One fixed text lets the embedded database keep it prepared (see `preparedQuery`).
 */
const GRANT = 'CASE WHEN EXCLUDED.last_limit IS NULL THEN EXCLUDED.last_grant ELSE LEAST(EXCLUDED.last_grant, GREATEST(0, EXCLUDED.last_limit - u.value)) END';

const COUNT = `
  WITH up AS (
    INSERT INTO usage_counters AS u (tenant_id, metric, bucket, value, last_grant, last_limit, expires_at)
    SELECT h.tenant_id, h.metric, h.bucket, LEAST(h.hits, coalesce(h.ceiling, h.hits)), h.hits, h.ceiling, h.expires_at
    FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::timestamptz[])
      WITH ORDINALITY AS h(tenant_id, metric, bucket, hits, ceiling, expires_at, ord)
    ORDER BY h.ord
    ON CONFLICT (tenant_id, metric, bucket) DO UPDATE SET last_grant = ${GRANT}, value = u.value + ${GRANT}, last_limit = EXCLUDED.last_limit
    RETURNING u.tenant_id, u.metric, u.bucket, u.value, u.last_grant, (u.xmax = 0) AS inserted)
  SELECT tenant_id, metric, bucket, value, last_grant, inserted, true AS counted FROM up
  UNION ALL
  SELECT tenant_id, metric, bucket, value, 0, false, false FROM usage_counters
  WHERE tenant_id = ANY($7::text[]) AND metric = ANY($8::text[]) AND bucket = ANY($9::text[])`;

const READS_IN_FLIGHT = 4;

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
 * On Workers a store lives for one request: there it puts the request's hits made together (its
 * monthly and daily counts) in one statement on one connection, where each would open a
 * connection of its own.
 */
export class CounterStore {
  private pending: Waiter[] = [];
  private pendingReads: ReadWaiter[] = [];
  private readsScheduled = false;
  private readsInFlight = 0;
  private flushing: Promise<void> | null = null;

  constructor(private readonly query: RawQuery) {}

  consume(hit: CounterHit): Promise<CounterOutcome> {
    return new Promise((resolve, reject) => {
      this.pending.push({ hit, resolve, reject });
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
    while (this.pending.length) {
      const batch = this.pending;
      this.pending = [];
      await this.flush(batch);
    }
    this.flushing = null;
  }

  /**
   * A batch is one statement (see `COUNT`), prepared: the upsert and the read together cost less CPU
   * than a VALUES upsert and a separate read, each parsed and planned every time.
   */
  private async flush(batch: Waiter[]): Promise<void> {
    try {
      const byRow = new Map<string, Waiter[]>();
      // Distinct read lists per tenant: a tenant's requests usually ask for the very same list.
      const readLists = new Map<string, Set<CounterHit['alsoRead']>>();
      for (const w of batch) {
        const { tenantId, alsoRead } = w.hit;
        const key = rowKey(tenantId, w.hit.metric, w.hit.bucket);
        const list = byRow.get(key);
        if (list) list.push(w);
        else byRow.set(key, [w]);
        if (alsoRead?.length) {
          const lists = readLists.get(tenantId);
          if (lists) lists.add(alsoRead);
          else readLists.set(tenantId, new Set([alsoRead]));
        }
      }
      const keys = [...byRow.keys()].sort();
      const columns: (string | number | null)[][] = [[], [], [], [], [], []];
      for (const key of keys) {
        const waiters = byRow.get(key)!;
        const hit = waiters[0].hit;
        columns[0].push(hit.tenantId);
        columns[1].push(hit.metric);
        columns[2].push(hit.bucket);
        columns[3].push(waiters.length);
        // A row's waiters share one ceiling: the tenant's tier at the moment of the batch.
        columns[4].push(waiters[waiters.length - 1].hit.limit);
        columns[5].push(hit.expiresAt?.toISOString() ?? null);
      }
      const reads = [new Set<string>(), new Set<string>(), new Set<string>()];
      for (const [tenantId, lists] of readLists) {
        for (const list of lists) {
          for (const x of list!) {
            if (byRow.has(rowKey(tenantId, x.metric, x.bucket))) continue;
            reads[0].add(tenantId);
            reads[1].add(x.metric);
            reads[2].add(x.bucket);
          }
        }
      }
      const result = await this.query<{
        tenant_id: string;
        metric: string;
        bucket: string;
        value: string | number;
        last_grant: string | number;
        inserted: boolean;
        counted: boolean;
      }>(COUNT, [...columns.map(pgArray), ...reads.map((r) => pgArray([...r]))]);
      const final = new Map<string, number>();
      const granted = new Map<string, number>();
      for (const r of result) {
        const key = rowKey(r.tenant_id, r.metric, r.bucket);
        // The read half sees the rows as they were before this statement: counted rows win.
        if (r.counted) granted.set(key, r.inserted ? Number(r.value) : Number(r.last_grant));
        else if (byRow.has(key)) continue;
        final.set(key, Number(r.value));
      }
      const readers = new Map<string, CounterOutcome['reading']>();
      const readerOf = (tenantId: string) => {
        let reader = readers.get(tenantId);
        if (!reader) {
          reader = (metric, bucket) => final.get(rowKey(tenantId, metric, bucket)) ?? 0;
          readers.set(tenantId, reader);
        }
        return reader;
      };
      for (const [key, waiters] of byRow) {
        const grant = granted.get(key)!;
        let value = final.get(key)! - grant;
        const reading = readerOf(waiters[0].hit.tenantId);
        for (let i = 0; i < waiters.length; i++) {
          const allowed = i < grant;
          if (allowed) value += 1;
          waiters[i].resolve({ allowed, value, reading });
        }
      }
    } catch (err) {
      for (const w of batch) w.reject(err);
    }
  }

  /** Current values of some metrics in one bucket each, for usage reports; batched like writes. */
  read(tenantId: string, wanted: readonly { metric: string; bucket: string }[]): Promise<number[]> {
    if (!wanted.length) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      this.pendingReads.push({ tenantId, wanted, resolve, reject });
      if (!this.readsScheduled) {
        this.readsScheduled = true;
        void nextTick().then(() => {
          this.readsScheduled = false;
          this.pumpReads();
        });
      }
    });
  }

  /**
   * Reads need no order among themselves, so a batch does not wait for the one before it: up to
   * READS_IN_FLIGHT go at once (on as many pooled connections), each with whatever queued since.
   */
  private pumpReads(): void {
    while (this.pendingReads.length && this.readsInFlight < READS_IN_FLIGHT) {
      const batch = this.pendingReads;
      this.pendingReads = [];
      this.readsInFlight++;
      void this.readBatch(batch).finally(() => {
        this.readsInFlight--;
        this.pumpReads();
      });
    }
  }

  private async readBatch(batch: ReadWaiter[]): Promise<void> {
    try {
      // Tenants, metrics and buckets as three sets: the combinations may over-read, and the rows not
      // asked for are ignored. One fixed text through the driver's own query, like COUNT.
      const sets = [new Set<string>(), new Set<string>(), new Set<string>()];
      for (const r of batch) {
        sets[0].add(r.tenantId);
        for (const w of r.wanted) {
          sets[1].add(w.metric);
          sets[2].add(w.bucket);
        }
      }
      const found = await this.query<{ tenant_id: string; metric: string; bucket: string; value: string | number }>(
        READ,
        sets.map((x) => pgArray([...x])),
      );
      const values = new Map(found.map((f) => [rowKey(f.tenant_id, f.metric, f.bucket), Number(f.value)]));
      for (const r of batch) {
        r.resolve(r.wanted.map((w) => values.get(rowKey(r.tenantId, w.metric, w.bucket)) ?? 0));
      }
    } catch (err) {
      for (const r of batch) r.reject(err);
    }
  }
}
