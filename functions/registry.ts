import type { Config } from '../shared/config';
import { EVENT_TOPIC } from '../shared/events';
import type { Logger } from '../shared/log';
import { mailJobHandler, MAIL_TOPIC } from '../shared/mail';
import { type MaintenanceTask, platformMaintenance } from '../shared/maintenance';
import type { JobHandlers } from '../shared/outbox';
import { indexPendingVectorsTask, VECTOR_INDEX_TOPIC, vectorIndexJob } from '../shared/vector-index';
import { pruneAuditRetention } from './audit/maintenance';
import { purgeExpiredMemories } from './memories/maintenance';

/** Every background job topic and its handler; both entry points wire exactly these. */
export function jobHandlers(config: Config, log: Logger): JobHandlers {
  return {
    [MAIL_TOPIC]: mailJobHandler(config, log),
    // Events fan out to webhook subscriptions; with no subscriptions a delivered event has no one to call.
    [EVENT_TOPIC]: async (job) => {
      log.debug('event recorded', { job_id: job.id, type: job.payload.type });
    },
    [VECTOR_INDEX_TOPIC]: vectorIndexJob,
  };
}

/** Scheduled housekeeping (cron on Workers, a timer on Node). */
export const maintenanceTasks: Record<string, MaintenanceTask> = {
  ...platformMaintenance,
  expired_memories: purgeExpiredMemories,
  audit_retention: pruneAuditRetention,
  pending_vectors: indexPendingVectorsTask,
};
