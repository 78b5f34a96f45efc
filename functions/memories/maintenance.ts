import { sql } from 'drizzle-orm';
import { appendAudit } from '../../shared/audit';
import { type Db, rows } from '../../shared/db';
import type { MaintenanceTask } from '../../shared/maintenance';
import { toUrn } from '../../shared/memory-access';
import { recordMemoryEvents } from '../../shared/memory-events';
import { adjustLiveMemories } from '../../shared/usage';
import { COLUMNS, type MemoryRow, toMemoryDto } from './queries';

const BATCH = 500;

/**
 * Deletes memories whose TTL has passed (reads already hide them), a batch per tenant at a time,
 * each with its `expire` event and one audit entry per tenant and batch.
 */
export const purgeExpiredMemories: MaintenanceTask = async (db: Db, now: Date) => {
  let purged = 0;
  for (;;) {
    const done = await db.transaction(async (tx) => {
      const expired = await rows<MemoryRow & { embedding_text: string }>(
        tx,
        sql`SELECT ${COLUMNS}, m.embedding::text AS embedding_text FROM memories m
            WHERE m.expires_at <= ${now.toISOString()}
            ORDER BY m.expires_at LIMIT ${BATCH} FOR UPDATE SKIP LOCKED`,
      );
      if (!expired.length) return 0;
      const byTenant = new Map<string, typeof expired>();
      for (const m of expired) byTenant.set(m.tenant_id, [...(byTenant.get(m.tenant_id) ?? []), m]);
      for (const [tenantId, list] of byTenant) {
        await tx.execute(sql`DELETE FROM memories WHERE tenant_id = ${tenantId} AND id IN (${sql.join(list.map((m) => sql`${m.id}::uuid`), sql`, `)})`);
        await recordMemoryEvents(
          tx,
          list.map((m) => ({ tenantId, memoryId: m.id, kind: 'expire' as const, at: now, actor: 'system', before: toMemoryDto(m), embedding: JSON.parse(m.embedding_text) as number[] })),
        );
        await appendAudit(tx, {
          tenantId,
          operation: 'memory.expire',
          resourceType: 'memory',
          actor: 'system',
          metadata: { count: list.length, memory_ids: list.map((m) => toUrn(m.id)) },
          at: now,
        });
        await adjustLiveMemories(tx, tenantId, -list.length);
      }
      return expired.length;
    });
    purged += done;
    if (done < BATCH) return purged;
  }
};
