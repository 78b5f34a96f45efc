import type { MaintenanceTask } from '../../shared/jobs/maintenance';
import { HOUR } from '../../shared/platform/contract/time';
import * as q from './queries';
import { expirePending } from './service';

const BATCH = 200;

/**
 * Denies actions pending review longer than ACTION_APPROVAL_TTL_HOURS with reason `expired`, each in
 * its own transaction (audited, `action.decided` emitted), oldest first. Scheduled maintenance, not a
 * timer: a restart loses nothing, and on Workers the cron runs it.
 */
export const expirePendingActions: MaintenanceTask = async (ctx) => {
  const before = new Date(ctx.now.getTime() - ctx.services.config.ACTION_APPROVAL_TTL_HOURS * HOUR);
  let expired = 0;
  for (;;) {
    const stale = await q.stalePending(ctx.db, before, BATCH);
    for (const action of stale) if (await expirePending(ctx, action, before)) expired++;
    if (stale.length < BATCH) return expired;
  }
};
