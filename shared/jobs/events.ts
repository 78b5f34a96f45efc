import { type SQL, sql } from 'drizzle-orm';
import { events } from '../../schema';
import { type DbOrTx, rows } from '../platform/data/db';
import { newId } from '../platform/contract/ids';
import { enqueueJob } from './outbox';
import { eventAfter } from '../memory/history';
import { currentTraceparent } from '../platform/http/tracing';

/**
 * Every event type a webhook may subscribe to and the live stream may filter on
 * (docs/architecture.md#webhooks-and-events). A family that emits a new type adds it here, so subscriptions can name it.
 */
export const EVENT_TYPES = [
  'memory.created',
  'memory.updated',
  'memory.deleted',
  'rollback.completed',
  'rollback.compensations',
  'anomaly.bulk_delete',
  'anomaly.rapid_writes',
  'anomaly.server_errors',
  'webhook.deactivated',
  'trace.completed',
  'trace.failed',
  'trace.interrupted',
  'action.pending_review',
  'action.decided',
  'mission.started',
  'mission.paused',
  'mission.resumed',
  'mission.completed',
  'mission.failed',
  'mission.cancelled',
  'mission.rolled_back',
  'intervention.recorded',
  'intervention.escalated',
  'intervention.rerouted',
  'erasure.completed',
  'import.progress',
  'import.completed',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];
/** Sent to one webhook by `POST /v1/webhooks/{id}/test`; never broadcast or streamed. */
export type TargetedEventType = 'webhook.test';

/** The body a `raw` webhook receives and the live stream sends: the event as stored. */
export interface EventPayload {
  id: string;
  type: EventType | TargetedEventType;
  created_at: string;
  tenant_id: string;
  data: Record<string, unknown>;
}

export const WEBHOOK_DELIVERY_TOPIC = 'webhook.deliver';

/** A delivery job: one event to one webhook; `delivery_id` names its first attempt's row. */
export interface DeliveryJob {
  webhook_id: string;
  event_id: string;
  delivery_id: string;
  /** The W3C traceparent of the request that caused it, when tracing is on: the delivery continues that trace. */
  traceparent?: string;
}

/**
 * Records an event in the caller's transaction and enqueues one delivery job per active webhook of
 * the tenant subscribed to its type, so an event and its deliveries exist exactly when the change
 * does. The per-tenant `seq` comes from the tenant's head row (the audit chain's), whose lock is
 * held to commit: a higher seq never commits before a lower one, which lets a stream resume after
 * a seq without missing anything. Returns the event id and whether deliveries were enqueued.
 */
export async function emitEvent(
  tx: DbOrTx,
  e: { tenantId: string; type: EventType; data: Record<string, unknown>; at: Date },
): Promise<{ id: string; deliveries: number }> {
  const [head] = await rows<{ event_seq: string | number }>(
    tx,
    sql`INSERT INTO audit_heads (tenant_id, event_seq) VALUES (${e.tenantId}, 1)
        ON CONFLICT (tenant_id) DO UPDATE SET event_seq = audit_heads.event_seq + 1
        RETURNING event_seq`,
  );
  const payload = await insertEvent(tx, { ...e, seq: Number(head.event_seq) });
  const subscribed = await rows<{ id: string }>(
    tx,
    sql`SELECT id FROM webhooks WHERE tenant_id = ${e.tenantId} AND active AND ${e.type} = ANY (events) ORDER BY id`,
  );
  for (const webhook of subscribed) await enqueueDelivery(tx, { tenantId: e.tenantId, webhookId: webhook.id, eventId: payload.id, at: e.at });
  return { id: payload.id, deliveries: subscribed.length };
}

/** Stores an event; `seq` null for one addressed to a single webhook. */
export async function insertEvent(
  tx: DbOrTx,
  e: { tenantId: string; type: EventType | TargetedEventType; data: Record<string, unknown>; at: Date; seq: number | null },
): Promise<EventPayload> {
  const payload: EventPayload = { id: newId('event'), type: e.type, created_at: e.at.toISOString(), tenant_id: e.tenantId, data: e.data };
  await tx.insert(events).values({ id: payload.id, tenantId: e.tenantId, seq: e.seq, type: e.type, payload: { ...payload }, createdAt: e.at });
  return payload;
}

/** The job that delivers a stored event to one webhook; `delivery_id` is fixed now so a caller can name it. */
export const deliveryJob = (webhookId: string, eventId: string): DeliveryJob => {
  const traceparent = currentTraceparent();
  return { webhook_id: webhookId, event_id: eventId, delivery_id: newId('delivery'), ...(traceparent ? { traceparent } : {}) };
};

export async function enqueueDelivery(tx: DbOrTx, d: { tenantId: string; webhookId: string; eventId: string; at: Date }) {
  await enqueueJob(tx, { tenantId: d.tenantId, topic: WEBHOOK_DELIVERY_TOPIC, payload: { ...deliveryJob(d.webhookId, d.eventId) }, runAt: d.at });
}

/**
 * A CTE `<name>_events` inserting stream events of one tenant whose seqs were just taken from its
 * head row: `headCte` returns the head's new `event_seq` (the last of the `payloads.length` taken,
 * see `chainSql`). Webhook deliveries are the caller's (`subscribedWebhooks`, `enqueueDelivery`).
 * The events are `memory.created` of memories whose create event (memory_events) the same
 * transaction recorded with the same snapshot: each names its memory (`memory_id`) and stores only
 * the rest of its `data`; `eventBodySql` puts the body together from the row and that create event.
 */
export function streamEventsSql(name: string, tenantId: string, headCte: string, payloads: EventPayload[]): SQL {
  const stored = payloads.map((p) => {
    const { memory, ...data } = p.data as { memory: { uuid: string } };
    return { id: p.id, type: p.type, created_at: p.created_at, data, memory_id: memory.uuid.replace(/^urn:uuid:/, '') };
  });
  return sql`${sql.raw(name)}_events AS (
    INSERT INTO events (id, tenant_id, seq, type, payload, created_at, memory_id)
    SELECT x.e->>'id', ${tenantId}, h.event_seq - ${payloads.length} + x.ord, x.e->>'type', x.e->'data', (x.e->>'created_at')::timestamptz,
           (x.e->>'memory_id')::uuid
    FROM ${sql.raw(headCte)} h, jsonb_array_elements(${JSON.stringify(stored)}::jsonb) WITH ORDINALITY AS x(e, ord))`;
}

/**
 * The body of the stored event `alias` (a row of events): its payload, or, for an event that names
 * its memory (see streamEventsSql), the body put together from its columns, the rest of its data
 * (payload) and the memory's create event. jsonb keeps one order of keys and `created_at` is
 * stored to the millisecond, so the body is the one stored whole before, byte for byte. An erasure
 * stores the redacted body whole before it deletes the create event (functions/erasures/purge.ts).
 */
export const eventBodySql = (alias: string): SQL => {
  const e = sql.raw(alias);
  const memory = sql`(SELECT ${eventAfter('me')} FROM memory_events me
    WHERE me.tenant_id = ${e}.tenant_id AND me.memory_id = ${e}.memory_id AND me.kind = 'create' ORDER BY me.id LIMIT 1)`;
  return sql`CASE WHEN ${e}.memory_id IS NULL THEN ${e}.payload
    ELSE jsonb_build_object('id', ${e}.id, 'type', ${e}.type, 'created_at', to_char(${e}.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
      'tenant_id', ${e}.tenant_id, 'data', ${e}.payload || jsonb_build_object('memory', coalesce(${memory}, 'null'::jsonb))) END`;
};

/** A stream event's stored body, before it is inserted. */
export const eventPayload = (e: { tenantId: string; type: EventType; data: Record<string, unknown>; at: Date }): EventPayload => ({
  id: newId('event'),
  type: e.type,
  created_at: e.at.toISOString(),
  tenant_id: e.tenantId,
  data: e.data,
});
