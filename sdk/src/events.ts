import { operationTable } from './generated/operations.js';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { EngramError } from './errors.js';
import { backoffMs, sleep, type Transport } from './transport.js';
import type { QueryOf } from './types.js';

/** events.stream, from the generated operation table. */
const STREAM = operationTable['events.stream'];

/** One event of the live stream: `id` its number, `type` its event type, `data` the raw webhook body. */
export interface EngramEvent {
  id: string;
  type: string;
  data: { id: string; type: string; created_at: string; tenant_id: string; data: Record<string, unknown> };
}

export interface StreamOptions {
  /** Resume after this event id (what `Last-Event-ID` carries); by default the next event to commit. */
  lastEventId?: string;
  /** Only these event types (`types`). */
  types?: QueryOf<'events.stream'>['types'];
  /** Ends the iteration (and the open request). */
  signal?: AbortSignal;
  /** Reconnections in a row without an event before giving up (default 10); the count resets on each event. */
  maxReconnects?: number;
}

/** Statuses after which reconnecting cannot help: the key, the tier or the request is wrong. */
const FINAL = new Set([400, 401, 403, 404]);

/**
 * GET /v1/events/stream (events.stream, docs/architecture.md#live-events) as an async iterator.
 * When the connection drops (the server closed it, the network failed, a 429/503) it reconnects
 * with `Last-Event-ID` set to the last event received, so no event is missed or repeated; it
 * stops when `signal` aborts, or throws after `maxReconnects` failed reconnections in a row.
 */
export async function* streamEvents(transport: Transport, opts: StreamOptions = {}): AsyncGenerator<EngramEvent, void, undefined> {
  let lastEventId = opts.lastEventId;
  let failures = 0;
  const maxReconnects = opts.maxReconnects ?? 10;
  while (!opts.signal?.aborted) {
    let res: Response;
    try {
      res = await transport.request<Response>(STREAM.method, STREAM.path, {
        raw: true,
        signal: opts.signal,
        query: opts.types ? { types: opts.types } : undefined,
        headers: lastEventId ? { 'last-event-id': lastEventId } : undefined,
      });
    } catch (err) {
      if (opts.signal?.aborted) return;
      if (err instanceof EngramError && FINAL.has(err.status)) throw err;
      if (++failures > maxReconnects) throw err;
      await sleep(backoffMs(failures), opts.signal).catch(() => undefined);
      continue;
    }
    let received = false;
    try {
      for await (const message of messages(res.body!, opts.signal)) {
        received = true;
        failures = 0;
        if (message.id) lastEventId = message.id;
        yield { id: message.id ?? '', type: message.event ?? 'message', data: JSON.parse(message.data) };
      }
    } catch (err) {
      if (opts.signal?.aborted) return;
      if (++failures > maxReconnects) throw new EngramError({ status: 0, code: 'NETWORK_ERROR', message: 'The event stream kept dropping', cause: err });
    }
    if (opts.signal?.aborted) return;
    // A stream that closes before any event counts as a failed reconnection.
    if (!received && ++failures > maxReconnects) throw new EngramError({ status: 0, code: 'NETWORK_ERROR', message: 'The event stream kept closing' });
    await sleep(backoffMs(failures), opts.signal).catch(() => undefined);
  }
}

/** The SSE messages of a body, parsed by eventsource-parser; comments (keepalives) are skipped. */
async function* messages(body: ReadableStream<Uint8Array>, signal?: AbortSignal): AsyncGenerator<EventSourceMessage> {
  const queue: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (message) => queue.push(message) });
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const cancel = () => reader.cancel().catch(() => undefined);
  signal?.addEventListener('abort', cancel, { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      parser.feed(decoder.decode(value, { stream: true }));
      while (queue.length) yield queue.shift()!;
    }
  } finally {
    signal?.removeEventListener('abort', cancel);
    cancel();
  }
}
