import { sql } from '../data/db';
import type { CounterStore } from '../data/counters';
import { type Db, rows } from '../data/db';
import type { RedisOps } from '../data/redis';

export interface RateWindow {
  /** Null for a window that belongs to no tenant (a client address, an e-mail before its account is verified). */
  tenantId: string | null;
  /** What the window counts: a key id, or a prefixed subject such as `verify-ip:<hash>`. */
  keyId: string;
  limit: number;
  windowMs: number;
  /** How many requests this hit stands for (a JSON-RPC batch is one per message); 1 unless said. */
  hits?: number;
}

export interface RateDecision {
  allowed: boolean;
  remaining: number;
  resetAt: Date;
}

/** Request rate in fixed windows, per key or per subject. */
export interface RateLimiter {
  hit(w: RateWindow, now: Date): Promise<RateDecision>;
}

const windowStart = (now: Date, windowMs: number) => Math.floor(now.getTime() / windowMs) * windowMs;

function decide(count: number, w: RateWindow, start: number): RateDecision {
  return { allowed: count <= w.limit, remaining: Math.max(0, w.limit - count), resetAt: new Date(start + w.windowMs) };
}

/**
 * Embedded mode only: one process owns the database, so its memory is the whole truth.
 * Windows are soft state; losing them on restart only forgives a minute of traffic.
 */
export class MemoryRateLimiter implements RateLimiter {
  private windows = new Map<string, { start: number; count: number }>();

  async hit(w: RateWindow, now: Date): Promise<RateDecision> {
    const start = windowStart(now, w.windowMs);
    let entry = this.windows.get(w.keyId);
    if (!entry || entry.start !== start) {
      if (this.windows.size > 50_000) this.prune(start);
      entry = { start, count: 0 };
      this.windows.set(w.keyId, entry);
    }
    entry.count += w.hits ?? 1;
    return decide(entry.count, w, start);
  }

  private prune(currentStart: number) {
    for (const [k, v] of this.windows) if (v.start !== currentStart) this.windows.delete(k);
  }
}

export class RedisRateLimiter implements RateLimiter {
  constructor(private readonly redis: RedisOps) {}

  async hit(w: RateWindow, now: Date): Promise<RateDecision> {
    const start = windowStart(now, w.windowMs);
    const count = await this.redis.incrWindow(`engram:rl:${w.keyId}:${start}`, w.windowMs, w.hits ?? 1);
    return decide(count, w, start);
  }
}

/**
 * Several instances without Redis: the window lives in Postgres, a key's batched like the quotas; a
 * window of no tenant in `rate_windows` (usage counters belong to a tenant), purged once expired.
 */
export class PostgresRateLimiter implements RateLimiter {
  constructor(
    private readonly counters: CounterStore,
    private readonly db: Db,
  ) {}

  async hit(w: RateWindow, now: Date): Promise<RateDecision> {
    const start = windowStart(now, w.windowMs);
    const hits = w.hits ?? 1;
    if (w.tenantId === null) {
      const [row] = await rows<{ hits: number }>(
        this.db,
        sql`INSERT INTO rate_windows AS r (subject, window_start, hits, expires_at)
            VALUES (${w.keyId}, ${new Date(start).toISOString()}, ${hits}, ${new Date(start + 2 * w.windowMs).toISOString()})
            ON CONFLICT (subject, window_start) DO UPDATE SET hits = r.hits + ${hits}
            RETURNING r.hits`,
      );
      return decide(Number(row.hits), w, start);
    }
    const hit = {
      tenantId: w.tenantId,
      metric: `rate:${w.keyId}`,
      bucket: new Date(start).toISOString(),
      limit: null,
      expiresAt: new Date(start + 2 * w.windowMs),
    };
    // Hits queued together go to the database as one row increment (group commit): n hits, one statement.
    const outcomes = await Promise.all(Array.from({ length: hits }, () => this.counters.consume(hit)));
    return decide(Math.max(...outcomes.map((o) => o.value)), w, start);
  }
}
