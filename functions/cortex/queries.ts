import { eq, type SQL, sql } from 'drizzle-orm';
import { cortexConfigs } from '../../schema/cortex';
import { tenants } from '../../schema/accounts';
import { COLUMNS, type MemoryRow } from '../../shared/memory/rows';
import { liveOf } from '../../shared/memory/cortex';
import { type DbOrTx, rows } from '../../shared/platform/db';

export type ConfigInsert = typeof cortexConfigs.$inferInsert;

export async function upsertConfig(db: DbOrTx, row: ConfigInsert) {
  const { tenantId: _t, ...set } = row;
  const [saved] = await db.insert(cortexConfigs).values(row).onConflictDoUpdate({ target: cortexConfigs.tenantId, set }).returning();
  return saved;
}

export async function recordRun(db: DbOrTx, tenantId: string, at: Date, stats: Record<string, unknown>) {
  await db
    .insert(cortexConfigs)
    .values({ tenantId, lastRunAt: at, runStats: stats, updatedAt: at })
    .onConflictDoUpdate({ target: cortexConfigs.tenantId, set: { lastRunAt: at, runStats: stats } });
}

/** Reinforce candidates: recall_count ≥ 3, recalled in the last 7 days, importance < 10, not reinforced by Cortex in the last 7 days. */
export const reinforceWhere = (tenantId: string, now: Date, weekAgo: Date) => sql`${liveOf(tenantId, now)}
  AND m.recall_count >= 3 AND m.last_recalled_at >= ${weekAgo.toISOString()} AND m.importance < 10
  AND NOT EXISTS (SELECT 1 FROM memory_events e WHERE e.tenant_id = ${tenantId} AND e.memory_id = m.id AND e.at > ${weekAgo.toISOString()}
                  AND e.actor = 'cortex' AND e.metadata->>'pass' = 'reinforce')`;

/** Decay candidates: older than the cutoff, not recalled since it, importance > 1. */
export const decayWhere = (tenantId: string, now: Date, cutoff: Date) => sql`${liveOf(tenantId, now)}
  AND m.created_at < ${cutoff.toISOString()} AND (m.last_recalled_at IS NULL OR m.last_recalled_at < ${cutoff.toISOString()}) AND m.importance > 1`;

/** One page (keyset on id) of the tenant's memories matching `where`. */
export const candidatePage = (db: DbOrTx, where: SQL, afterId: string | null, limit: number) =>
  rows<MemoryRow>(db, sql`SELECT ${COLUMNS} FROM memories m WHERE ${where} ${afterId ? sql`AND m.id > ${afterId}::uuid` : sql``} ORDER BY m.id LIMIT ${limit}`);

/** Locks one memory if it still matches `where` (re-checked inside the write). */
export async function lockIf(tx: DbOrTx, tenantId: string, id: string, where: SQL) {
  const [row] = await rows<MemoryRow>(tx, sql`SELECT ${COLUMNS} FROM memories m WHERE m.tenant_id = ${tenantId} AND m.id = ${id}::uuid AND ${where} FOR UPDATE`);
  return row ?? null;
}

export async function update(tx: DbOrTx, tenantId: string, id: string, sets: SQL[], now: Date) {
  const [row] = await rows<MemoryRow & { embedding_text: string }>(
    tx,
    sql`UPDATE memories m SET ${sql.join([...sets, sql`version = m.version + 1`, sql`updated_at = ${now.toISOString()}`], sql`, `)}
        WHERE m.id = ${id}::uuid AND m.tenant_id = ${tenantId}
        RETURNING ${COLUMNS}, m.embedding::text AS embedding_text`,
  );
  return row;
}

/** Tenants with Cortex enabled, on a tier that has it, not run since `before`. */
export const dueTenants = (db: DbOrTx, before: Date, tiers: string[]) =>
  rows<{ id: string; tier: string; email: string }>(
    db,
    sql`SELECT t.id, t.tier, t.email FROM ${cortexConfigs} c JOIN ${tenants} t ON t.id = c.tenant_id
        WHERE c.enabled AND (c.last_run_at IS NULL OR c.last_run_at < ${before.toISOString()}) AND t.tier IN ${sql`(${sql.join(tiers.map((x) => sql`${x}`), sql`, `)})`}
        ORDER BY t.id`,
  );

export const configOf = (db: DbOrTx, tenantId: string) => db.select().from(cortexConfigs).where(eq(cortexConfigs.tenantId, tenantId));
