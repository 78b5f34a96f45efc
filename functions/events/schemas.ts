import { z } from '@hono/zod-openapi';
import { EVENT_TYPES } from '../../shared/jobs/events';
import { CsvEnum } from '../../shared/platform/contract/params';

/** An event number as a client sends it back: a non-negative integer. */
const EventNumber = (description: string, example: string) =>
  z
    .string()
    .regex(/^\d{1,15}$/, 'must be a non-negative integer: the `id:` of the last event received')
    .transform(Number)
    .openapi({ description, example });

export const StreamQuery = z.object({
  types: CsvEnum(
    EVENT_TYPES,
    `Comma-separated event types to receive, any of ${EVENT_TYPES.join(', ')}; all when absent`,
    'memory.created,memory.deleted',
  ).optional(),
  last_event_id: EventNumber(
    'Resume after this event, for clients that cannot send the `Last-Event-ID` header; the header wins when both are sent (an EventSource reconnecting keeps the URL and sends the header). `0`: every event still stored',
    '0',
  ).optional(),
});

export const StreamHeaders = z.object({
  'last-event-id': EventNumber(
    'Resume after this event: the stream sends every later one. Without it the stream starts with the next event to commit. A number above your latest event is 400.',
    '42',
  ).optional(),
});

const EXAMPLE_EVENT = {
  id: 'evt_4f9Qw2b8Zr1LmT0aXcVe3K',
  type: 'memory.created',
  created_at: '2026-11-15T12:00:00.000Z',
  tenant_id: 'ten_4f9Qw2b8Zr1LmT0aXcVe3K',
  data: { memory: { uuid: 'urn:uuid:01937a4e-8f2a-7c3b-9d4e-5f6a7b8c9d0e', observation: 'Prefers dark mode' } },
};

export const StreamBody = z.string().openapi({
  description:
    "Server-Sent Events. Each event: `id: <seq>` (the tenant's event number, increasing in commit order), `event: <type>`, `data: <the raw webhook body: {id, type, created_at, tenant_id, data}>`. A comment line `: keepalive` every 15 s.",
  example: `id: 42\nevent: memory.created\ndata: ${JSON.stringify(EXAMPLE_EVENT)}\n\n: keepalive\n\n`,
});
