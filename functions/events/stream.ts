import type { EventPayload } from '../../shared/jobs/events';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { errorFields } from '../../shared/platform/contract/error-fields';
import { hasFeature } from '../../shared/platform/contract/tiers';
import type { Lease } from './leases';
import * as q from './queries';

/** Events read per query; a full batch is followed by the next one at once. */
export const BATCH = 200;

/** Where a stream writes: the SSE response (hono/streaming), or anything else that takes text. */
export interface Sink {
  write(text: string): Promise<unknown>;
}

export interface OpenStream {
  ctx: TenantCtx;
  /** The number of the last event the client has; the stream sends the ones after it. */
  after: number;
  /** Event types to send; null for all. */
  types: readonly string[] | null;
  lease: Lease;
}

/** One event in the wire format of docs/architecture.md#live-events: `id: <seq>`, `event: <type>`, `data: <raw webhook body>`. */
export function formatEvent(seq: number, p: EventPayload): string {
  // The raw webhook body, top-level fields in their documented order (jsonb keeps its own).
  const body = { id: p.id, type: p.type, created_at: p.created_at, tenant_id: p.tenant_id, data: p.data };
  return `id: ${seq}\nevent: ${p.type}\ndata: ${JSON.stringify(body)}\n\n`;
}

export const KEEPALIVE = ': keepalive\n\n';

/**
 * Why a stream's key may no longer read it (checked on every heartbeat and before every delivery), or null while it may: a
 * revoked or expired key, or a tier that lost the feature, ends the stream; the client's reconnect
 * then gets the 401 or 403.
 */
async function standing(ctx: TenantCtx, now: Date): Promise<string | null> {
  const key = await q.keyStanding(ctx.services.db, ctx.auth.keyId);
  if (!key || key.status === 'revoked') return 'key revoked';
  if (key.expires_at && new Date(key.expires_at) <= now) return 'key expired';
  if (key.status === 'grace' && key.grace_expires_at && new Date(key.grace_expires_at) <= now) return 'key expired';
  if (!hasFeature(key.tier, 'webhooks')) return 'tier without event streams';
  return null;
}

/**
 * Sends the tenant's events after `open.after` as they commit, until the client goes away
 * (`signal`), the process shuts down, or the key loses its standing. It reads the events table
 * when this process's event bus says a commit stored events for the tenant (Node), and every
 * `EVENT_STREAM_POLL_MS` in any case (events other instances committed; on Workers, all of them).
 * Before it sends events it checks the key; every `EVENT_STREAM_HEARTBEAT_MS` it renews its lease,
 * checks the key and writes a comment line.
 * Whatever ends it, its timer is cleared, it leaves the bus and its lease is given back.
 */
export async function runStream(open: OpenStream, sink: Sink, signal: AbortSignal): Promise<void> {
  const { services } = open.ctx;
  const { log, config } = services;
  const heartbeatMs = config.EVENT_STREAM_HEARTBEAT_MS;
  const pollMs = config.EVENT_STREAM_POLL_MS;
  let after = open.after;
  let ended = false;
  // A read is due at once: events may have committed between the head read and the subscription.
  let due = true;
  let wakeUp: (() => void) | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const wake = () => {
    due = true;
    wakeUp?.();
  };
  const stop = () => {
    ended = true;
    wakeUp?.();
  };
  signal.addEventListener('abort', stop);
  const unsubscribe = services.eventBus?.subscribe(open.ctx.tenantId, { wake, close: stop });
  let nextPoll = Date.now() + pollMs;
  let nextBeat = Date.now() + heartbeatMs;
  const live = () => !ended && !signal.aborted;

  try {
    while (live()) {
      if (due || Date.now() >= nextPoll) {
        due = false;
        nextPoll = Date.now() + pollMs;
        const batch = await q.eventsAfter(services.db, open.ctx.tenantId, after, open.types, BATCH);
        let text = '';
        for (const e of batch) if (e.payload) text += formatEvent(e.seq, e.payload);
        // A key revoked (or expired, or rotated out) since the last check gets nothing more, even
        // between heartbeats: the check reads the key's row, so it holds on every instance.
        const why = text && live() ? await standing(open.ctx, services.clock.now()) : null;
        if (why) {
          if (live()) await sink.write(`: stream ended: ${why}\n\n`);
          break;
        }
        if (text && live()) await sink.write(text);
        if (batch.length) after = batch[batch.length - 1].seq;
        if (batch.length === BATCH) due = true;
      }
      if (live() && Date.now() >= nextBeat) {
        nextBeat = Date.now() + heartbeatMs;
        const now = services.clock.now();
        const why = (await open.lease.renew()) ? await standing(open.ctx, now) : 'too many streams for this key';
        if (why) {
          if (live()) await sink.write(`: stream ended: ${why}\n\n`);
          break;
        }
        if (live()) await sink.write(KEEPALIVE);
      }
      if (!live() || due) continue;
      await new Promise<void>((resolve) => {
        wakeUp = resolve;
        timer = setTimeout(resolve, Math.max(0, Math.min(nextPoll, nextBeat) - Date.now()));
      });
      clearTimeout(timer);
      wakeUp = null;
    }
  } catch (err) {
    // The client reconnects with Last-Event-ID and misses nothing; a database that is away answers it 503.
    if (live()) log.warn('event stream ended by an error', { request_id: open.ctx.requestId, ...errorFields(err) });
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', stop);
    try {
      await open.lease.release();
    } catch (err) {
      log.warn('event stream lease not released; it lapses on its own', { request_id: open.ctx.requestId, ...errorFields(err) });
    }
    unsubscribe?.();
  }
}
