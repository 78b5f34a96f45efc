import type { TenantCtx } from '../../shared/platform/contract/context';
import { AppError } from '../../shared/platform/contract/errors';
import { newId } from '../../shared/platform/contract/ids';
import { write } from '../../shared/platform/data/unit-of-work';
import * as q from './queries';

/**
 * "A few streams per key", across instances: every open stream holds a lease that lapses unless its
 * heartbeat renews it, and is given back when the stream ends. With Redis the leases are members of
 * a sorted set per key scored by their last renewal (the same sliding-window operations as the
 * signup limiter); without it they are rows of `event_stream_leases`, taken under the key's
 * advisory lock. A crashed instance's leases lapse after `ttlMs` (four heartbeats), so its streams
 * stop counting a minute after it went away (with the default 15 s heartbeat).
 */
export interface Lease {
  readonly id: string;
  /** Renews the lease; false when it lapsed and the key has no room left to take it again. */
  renew(): Promise<boolean>;
  release(): Promise<void>;
}

export const leaseTtlMs = (heartbeatMs: number) => 4 * heartbeatMs;

function limitReached(limit: number, heartbeatMs: number) {
  return new AppError(
    'RATE_LIMITED',
    `At most ${limit} event streams may be open at once per API key; close one and retry (a stream whose client went away without closing stops counting within ${Math.ceil(leaseTtlMs(heartbeatMs) / 1000)} s)`,
    { retry_after: Math.max(1, Math.ceil(heartbeatMs / 1000)) },
  );
}

/** Takes a lease for a new stream of the ctx's key, or throws 429 RATE_LIMITED when the key holds `EVENT_STREAMS_PER_KEY`. */
export async function takeLease(ctx: TenantCtx): Promise<Lease> {
  const { config, redis, clock } = ctx.services;
  const limit = config.EVENT_STREAMS_PER_KEY;
  const ttlMs = leaseTtlMs(config.EVENT_STREAM_HEARTBEAT_MS);
  const id = newId('stream');
  const keyId = ctx.auth.keyId;

  if (redis) {
    const key = `engram:event-streams:${keyId}`;
    const release = () => redis.removeFromSlidingWindow(key, id);
    const count = await redis.addToSlidingWindow(key, id, clock.now().getTime(), ttlMs);
    if (count > limit) {
      await release().catch(() => undefined);
      throw limitReached(limit, config.EVENT_STREAM_HEARTBEAT_MS);
    }
    return {
      id,
      // Re-adding moves the member's score (its renewal time). A renewal is never refused: a
      // count above the limit may be another stream's attempt that is about to give its slot back.
      renew: async () => {
        await redis.addToSlidingWindow(key, id, clock.now().getTime(), ttlMs);
        return true;
      },
      release,
    };
  }

  const hold = (renewing: boolean) =>
    write(ctx, async (work) => {
      await work.lock(`event-streams:${keyId}`);
      const now = clock.now();
      const expiresAt = new Date(now.getTime() + ttlMs);
      await q.dropLapsedLeases(work.tx, keyId, now);
      if (renewing && (await q.extendLease(work.tx, { id, tenantId: ctx.tenantId, expiresAt }))) return true;
      return q.insertLeaseIfRoom(work.tx, { id, tenantId: ctx.tenantId, keyId, expiresAt, now, limit });
    });
  if (!(await hold(false))) throw limitReached(limit, config.EVENT_STREAM_HEARTBEAT_MS);
  return {
    id,
    renew: () => hold(true),
    release: () => write(ctx, (work) => q.deleteLease(work.tx, { id, tenantId: ctx.tenantId })),
  };
}
