import { sql } from 'drizzle-orm';
import { type Db, pgArray, rows } from './db';

export interface CounterHit {
  tenantId: string;
  metric: string;
  bucket: string;
  /** `null`: count without a ceiling. */
  limit: number | null;
  /** Rows with an expiry (request windows) are purged by maintenance. */
  expiresAt?: Date | null;
  amount?: number;
}

export interface CounterOutcome {
  allowed: boolean;
  /** The counter after this hit (unchanged when the hit was refused). */
  value: number;
}

interface Waiter {
  hit: CounterHit;
  resolve: (o: CounterOutcome) => void;
  reject: (e: unknown) => void;
}

const rowKey = (h: CounterHit) => `${h.tenantId}\u0000${h.metric}\u0000${h.bucket}`;

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
  private flushing: Promise<void> | null = null;

  constructor(
    private readonly db: Db,
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
    // Requests that arrive in this turn of the event loop join the first batch.
    await Promise.resolve();
    while (this.pending.length) {
      const batch = this.pending;
      this.pending = [];
      await this.flush(batch);
    }
    this.flushing = null;
  }

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
      const first = keys.map((k) => byRow.get(k)![0].hit);
      const outcomes = new Map<Waiter, CounterOutcome>();

      await this.db.transaction(async (tx) => {
        const tenants = pgArray(first.map((h) => h.tenantId));
        const metrics = pgArray(first.map((h) => h.metric));
        const buckets = pgArray(first.map((h) => h.bucket));
        const expiries = pgArray(first.map((h) => h.expiresAt?.toISOString() ?? null));
        await tx.execute(sql`
          INSERT INTO usage_counters (tenant_id, metric, bucket, value, expires_at)
          SELECT t, m, b, 0, e::timestamptz
          FROM unnest(${tenants}::text[], ${metrics}::text[], ${buckets}::text[], ${expiries}::text[]) AS r(t, m, b, e)
          ON CONFLICT DO NOTHING`);
        const locked = await rows<{ tenant_id: string; metric: string; bucket: string; value: string | number }>(
          tx,
          sql`
          SELECT u.tenant_id, u.metric, u.bucket, u.value
          FROM usage_counters u
          JOIN unnest(${tenants}::text[], ${metrics}::text[], ${buckets}::text[]) AS r(t, m, b)
            ON u.tenant_id = r.t AND u.metric = r.m AND u.bucket = r.b
          ORDER BY u.tenant_id, u.metric, u.bucket
          FOR UPDATE OF u`,
        );
        const current = new Map(locked.map((r) => [rowKey({ tenantId: r.tenant_id, metric: r.metric, bucket: r.bucket, limit: null }), Number(r.value)]));
        const added: number[] = [];
        for (const key of keys) {
          const start = current.get(key) ?? 0;
          let value = start;
          for (const w of byRow.get(key)!) {
            const amount = w.hit.amount ?? 1;
            const allowed = w.hit.limit === null || value + amount <= w.hit.limit;
            if (allowed) value += amount;
            outcomes.set(w, { allowed, value });
          }
          added.push(value - start);
        }
        await tx.execute(sql`
          UPDATE usage_counters u SET value = u.value + r.n
          FROM unnest(${tenants}::text[], ${metrics}::text[], ${buckets}::text[], ${pgArray(added)}::bigint[]) AS r(t, m, b, n)
          WHERE u.tenant_id = r.t AND u.metric = r.m AND u.bucket = r.b AND r.n <> 0`);
      });
      for (const w of batch) w.resolve(outcomes.get(w)!);
    } catch (err) {
      for (const w of batch) w.reject(err);
    }
  }

  /** Current values of some metrics in one bucket each, for usage reports. */
  async read(tenantId: string, wanted: { metric: string; bucket: string }[]): Promise<number[]> {
    if (!wanted.length) return [];
    const found = await rows<{ metric: string; bucket: string; value: string | number }>(
      this.db,
      sql`
      SELECT u.metric, u.bucket, u.value FROM usage_counters u
      JOIN unnest(${pgArray(wanted.map((w) => w.metric))}::text[], ${pgArray(wanted.map((w) => w.bucket))}::text[]) AS r(m, b)
        ON u.metric = r.m AND u.bucket = r.b
      WHERE u.tenant_id = ${tenantId}`,
    );
    return wanted.map((w) => Number(found.find((f) => f.metric === w.metric && f.bucket === w.bucket)?.value ?? 0));
  }
}
