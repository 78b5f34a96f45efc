import type { MaintenanceTask } from '../../shared/jobs/maintenance';
import { toUrn } from '../../shared/platform/contract/ids';
import { write } from '../../shared/platform/data/unit-of-work';
import { adjustLiveMemories } from '../../shared/platform/data/usage';
import * as q from './queries';

const BATCH = 500;

/**
 * Deletes memories whose TTL has passed (reads already hide them), a batch per tenant at a time,
 * each with its `expire` event and one audit entry per tenant and batch, by actor `system`.
 */
export const purgeExpiredMemories: MaintenanceTask = async (ctx) => {
  let purged = 0;
  for (;;) {
    const done = await write(ctx, async (work) => {
      const expired = await q.lockExpired(work.tx, ctx.now, BATCH);
      const byTenant = new Map<string, typeof expired>();
      for (const m of expired) byTenant.set(m.tenant_id, [...(byTenant.get(m.tenant_id) ?? []), m]);
      for (const [tenantId, list] of byTenant) {
        await q.deleteMemories(
          work.tx,
          tenantId,
          list.map((m) => m.id),
        );
        await work.memoryEvents(
          list.map((m) => ({
            tenantId,
            memoryId: m.id,
            kind: 'expire' as const,
            before: q.toMemoryDto(m),
            embedding: JSON.parse(m.embedding_text) as number[],
          })),
        );
        await work.audit({
          tenantId,
          operation: 'memory.expire',
          resourceType: 'memory',
          metadata: { count: list.length, memory_ids: list.map((m) => toUrn(m.id)) },
        });
        await adjustLiveMemories(work.tx, tenantId, -list.length);
      }
      return expired.length;
    });
    purged += done;
    if (done < BATCH) return purged;
  }
};
