import type { Config } from '../shared/platform/contract/config';
import type { Logger } from '../shared/platform/data/log';
import { mailJobHandler, MAIL_TOPIC } from '../shared/jobs/mail';
import { type MaintenanceTask, platformMaintenance } from '../shared/jobs/maintenance';
import type { JobHandlers } from '../shared/jobs/outbox';
import { indexPendingVectorsTask, VECTOR_INDEX_TOPIC, vectorIndexJob } from '../shared/memory/vector-index';
import { families } from './families';

/** Every background job topic and its handler: the platform's and each family's. Both entry points wire exactly these. */
export function jobHandlers(config: Config, log: Logger): JobHandlers {
  const handlers: JobHandlers = {
    [MAIL_TOPIC]: mailJobHandler(config, log),
    [VECTOR_INDEX_TOPIC]: vectorIndexJob,
  };
  for (const family of families) Object.assign(handlers, family.jobs);
  return handlers;
}

/** Scheduled housekeeping (cron on Workers, a timer on Node): the platform's tasks and each family's. */
export const maintenanceTasks: Record<string, MaintenanceTask> = Object.assign(
  { ...platformMaintenance, pending_vectors: indexPendingVectorsTask },
  ...families.map((f) => f.maintenance ?? {}),
);
