import type { CounterStore } from './counters';
import type { RedisOps } from './redis';

export interface RateWindow {
  tenantId: string;
  keyId: string;
  limit: number;
  windowMs: number;
}

export interface RateDecision {
  allowed: boolean;
  remaining: number;
  resetAt: Date;
}

/** Per-key request rate in fixed windows. */
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
    entry.count += 1;
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
    const count = await this.redis.incrWindow(`engram:rl:${w.keyId}:${start}`, w.windowMs);
    return decide(count, w, start);
  }
}

/** Several instances without Redis: the window lives in Postgres, batched like the quotas. */
export class PostgresRateLimiter implements RateLimiter {
  constructor(private readonly counters: CounterStore) {}

  async hit(w: RateWindow, now: Date): Promise<RateDecision> {
    const start = windowStart(now, w.windowMs);
    const outcome = await this.counters.consume({
      tenantId: w.tenantId,
      metric: `rate:${w.keyId}`,
      bucket: new Date(start).toISOString(),
      limit: null,
      expiresAt: new Date(start + 2 * w.windowMs),
    });
    return decide(outcome.value, w, start);
  }
}
