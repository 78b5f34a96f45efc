import { streamSSE } from 'hono/streaming';
import { createRouter } from '../../shared/platform/http/app';
import { ctxOf } from '../../shared/platform/contract/context';
import { defineFamily } from '../../shared/platform/http/family';
import * as q from './queries';
import * as routes from './routes';
import * as service from './service';
import { runStream } from './stream';

const router = createRouter().openapi(routes.streamRoute, async (c) => {
  const ctx = ctxOf(c);
  const query = c.req.valid('query');
  const header = c.req.valid('header')['last-event-id'];
  const input = {
    types: query.types,
    lastEventId: header ?? query.last_event_id,
    lastEventIdField: header !== undefined ? 'last-event-id' : 'last_event_id',
  };
  // HEAD: the answer GET would start with, and no stream (hono drops a HEAD response's body
  // without cancelling it, so a stream started here would never learn that nobody reads it).
  if (c.req.raw.method === 'HEAD') {
    await service.start(ctx, input);
    return c.body(null, 200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }) as never;
  }
  const open = await service.open(ctx, input);
  // hono's SSE response: its abort (the client went away) stops the stream.
  return streamSSE(c, async (sse) => {
    const client = new AbortController();
    sse.onAbort(() => client.abort());
    if (sse.aborted) client.abort();
    const done = runStream(open, sse, client.signal);
    ctx.services.waitUntil?.(done);
    await done;
  }) as never;
});

export default defineFamily({
  name: 'events',
  tag: { name: 'Events', description: 'Live stream of your events (Server-Sent Events), resumable with Last-Event-ID' },
  router,
  maintenance: { lapsed_event_stream_leases: ({ db, now }) => q.deleteLapsedLeases(db, now) },
});
