import { keyRoute } from '../../shared/platform/http/openapi';
import { routeOf } from '../../shared/platform/http/verb';
import * as s from './schemas';
import { openStreamVerb } from './verbs';

const tags = ['Events'];

export const streamRoute = keyRoute({
  ...routeOf(openStreamVerb),
  path: '/v1/events/stream',
  tags,
  summary: 'Live event stream (Server-Sent Events, Pro+)',
  description: [
    'Your events as they commit, as Server-Sent Events: the events webhooks receive (`memory.created`, `memory.updated`, `memory.deleted`, `rollback.completed`, ...), each with `id:` its number (per account, increasing in commit order), `event:` its type and `data:` the raw webhook body. Webhook tests are not streamed.',
    'Resume with the `Last-Event-ID` header (or `last_event_id`): the stream sends every event after it, none missed; without one it starts with the next event to commit. `types` filters. A comment line `: keepalive` comes every 15 s.',
    'At most 5 streams per API key may be open at once, across instances: one more is answered 429 RATE_LIMITED. A stream counts until it is closed, or, when its client vanished without closing, for at most a minute. A stream ends when its key is revoked or expires, checked at each keepalive. Streams are part of the webhooks feature.',
  ].join('\n\n'),
  // The verb's query, and the header only a route can read.
  request: { ...routeOf(openStreamVerb).request, headers: s.StreamHeaders },
  responses: {
    200: {
      description: 'An open event stream (text/event-stream); it never ends on its own',
      content: { 'text/event-stream': { schema: s.StreamBody } },
    },
  },
});
