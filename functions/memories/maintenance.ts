import type { MaintenanceTask } from '../../shared/jobs/maintenance';
import { toUrn } from '../../shared/platform/contract/ids';
import { write } from '../../shared/platform/data/unit-of-work';
import { adjustLiveMemories } from '../../shared/platform/data/usage';
import * as q from './queries';

const BATCH = 500;

/** A tenant's corpus statistics are folded by the maintenance once they hold more delta rows than this. */
export const CORPUS_STATS_MAINTENANCE_FOLD_AT = 8;
/** At most this many tenants folded a run, so one run cannot stall on a backlog; the rest are folded by the next. */
export const CORPUS_STATS_TENANTS_PER_RUN = 1000;

/**
 * Folds the corpus-statistics deltas (one row per store, queries/search.ts) of the tenants that
 * have piled up the most, each in its own statement, as a keyword search does for its own tenant:
 * a tenant that only writes would otherwise keep one row per write for ever (docs/operations.md, the cron trigger).
 * Returns the tenants folded.
 */
export const foldCorpusStatistics: MaintenanceTask = async ({ db }) => {
  const tenants = await q.corpusStatsToFold(db, CORPUS_STATS_MAINTENANCE_FOLD_AT, CORPUS_STATS_TENANTS_PER_RUN);
  for (const tenantId of tenants) await q.foldCorpusStats(db, tenantId);
  return tenants.length;
};

/** A big tenant's words' statistics are folded once this many memories were stored since its mark. */
export const LEXEME_STATS_FOLD_AT = 1000;
/** Memories counted by one fold: the tenant's writers wait for it, so it stays short. */
export const LEXEME_STATS_FOLD_SIZE = 5000;
/** At most this many folds a tenant and this many tenants a run; the next run goes on. */
export const LEXEME_STATS_FOLDS_PER_TENANT = 40;
export const LEXEME_STATS_TENANTS_PER_RUN = 100;

/**
 * Moves the big tenants' keyword statistics up to their latest memories (migrations/0058), so a
 * keyword search counts only the postings stored since. Returns the memories counted.
 */
export const foldLexemeStatistics: MaintenanceTask = async ({ db }) => {
  let counted = 0;
  for (const tenantNo of await q.lexemeStatsTenants(db, LEXEME_STATS_TENANTS_PER_RUN)) {
    for (let i = 0; i < LEXEME_STATS_FOLDS_PER_TENANT; i++) {
      const n = await q.foldLexemeStats(db, tenantNo, LEXEME_STATS_FOLD_AT, LEXEME_STATS_FOLD_SIZE);
      counted += n;
      if (n < LEXEME_STATS_FOLD_SIZE) break;
    }
  }
  return counted;
};

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
