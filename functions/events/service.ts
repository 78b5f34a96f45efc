import type { EventType } from '../../shared/jobs/events';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { validationError } from '../../shared/platform/contract/errors';
import { takeLease } from './leases';
import * as q from './queries';
import type { OpenStream } from './stream';

/**
 * Opens a live stream of the tenant's events: where it starts, which types it sends, and its lease
 * (429 past `EVENT_STREAMS_PER_KEY` open streams of the key). Everything that can refuse happens
 * here, before the response starts, so a refusal is an ordinary JSON error.
 *
 * Resuming: events commit in number order per tenant (shared/jobs/events.ts), so the events after
 * the client's last one are exactly those it missed. Without a last event the stream starts at the
 * tenant's head: only events that commit after the stream opened. A number above the head names
 * no event ever sent: 400.
 */
export async function open(ctx: TenantCtx, input: StreamInput): Promise<OpenStream> {
  const after = await start(ctx, input);
  const lease = await takeLease(ctx);
  return { ctx, after, types: input.types?.length ? input.types : null, lease };
}

interface StreamInput {
  types?: EventType[];
  lastEventId?: number;
  /** Which of the two ways the client sent it, for the 400. */
  lastEventIdField?: string;
}

/** The number the stream starts after; 400 for one above the head. A HEAD request runs only this. */
export async function start(ctx: TenantCtx, input: StreamInput): Promise<number> {
  const head = await q.head(ctx.db, ctx.tenantId);
  if (input.lastEventId !== undefined && input.lastEventId > head) {
    throw validationError(input.lastEventIdField ?? 'last-event-id', `no event ${input.lastEventId} yet: the latest event is ${head}`);
  }
  return input.lastEventId ?? head;
}
