import type { MaintenanceTask } from '../../shared/jobs/maintenance';
import { HOUR } from '../../shared/platform/contract/time';
import * as q from './queries';
import { interruptIdleTrace } from './service';

const BATCH = 200;

/**
 * Seals active traces idle longer than TRACE_IDLE_TIMEOUT_HOURS as `interrupted`, each in its own
 * transaction, signed like a completion. Without a signing key the traces stay active (and the
 * task fails with the key's 503, in the log) until one is configured.
 */
export const interruptIdleTraces: MaintenanceTask = async (ctx) => {
  const idleBefore = new Date(ctx.now.getTime() - ctx.services.config.TRACE_IDLE_TIMEOUT_HOURS * HOUR);
  let sealed = 0;
  for (;;) {
    const idle = await q.idleTraces(ctx.db, idleBefore, BATCH);
    if (!idle.length) return sealed;
    const key = await ctx.services.signingKey();
    for (const trace of idle) if (await interruptIdleTrace(ctx, trace, idleBefore, key)) sealed++;
    if (idle.length < BATCH) return sealed;
  }
};
