import { defineVerb } from '../../shared/platform/http/verb';
import * as s from './schemas';
import { open } from './service';

/**
 * Opening the live stream (docs/architecture.md#verbs). The route also reads `Last-Event-ID` from
 * its header; the console's inbox opens it with the query fields only.
 */
export const openStreamVerb = defineVerb({
  name: 'events.stream',
  method: 'get',
  feature: 'webhooks',
  input: { query: s.StreamQuery },
  run: (ctx, query) => open(ctx, { types: query.types, lastEventId: query.last_event_id, lastEventIdField: 'last_event_id' }),
});
