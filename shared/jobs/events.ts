import type { DbOrTx } from '../platform/db';
import { enqueueJob, type Job } from './outbox';

export const EVENT_TOPIC = 'event';

export type EventType =
  | 'memory.created'
  | 'memory.updated'
  | 'memory.deleted'
  | 'rollback.completed'
  | 'rollback.compensations'
  | 'anomaly.bulk_delete'
  | 'anomaly.rapid_writes'
  | 'anomaly.server_errors';

/**
 * Records an event for webhook delivery in the caller's transaction. The `event` job fans out to
 * the tenant's subscriptions when it runs, so an event exists exactly when its change does.
 */
export async function emitEvent(tx: DbOrTx, e: { tenantId: string; type: EventType; data: Record<string, unknown>; at: Date }) {
  return enqueueJob(tx, {
    tenantId: e.tenantId,
    topic: EVENT_TOPIC,
    payload: { type: e.type, tenant_id: e.tenantId, created_at: e.at.toISOString(), data: e.data },
    runAt: e.at,
  });
}

export type EventFanOut = (job: Job) => Promise<void>;
