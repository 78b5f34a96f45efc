import { sql } from 'drizzle-orm';
import { type Db, rows } from '../../shared/platform/data/db';
import type { MaintenanceTask } from '../../shared/jobs/maintenance';
import { tiers, TIERS } from '../../shared/platform/contract/tiers';
import { DAY } from '../../shared/platform/contract/time';

const TENANTS_PER_QUERY = 500;

/** Each tier's retention as a SQL row source `r(tier, days)`, to join with tenants.tier. */
const retentionDays = () =>
  sql`(VALUES ${sql.join(
    TIERS.map((t) => sql`(${t}::text, ${tiers[t].limits.audit_retention_days}::int)`),
    sql`, `,
  )}) AS r(tier, days)`;

function affected(result: unknown): number {
  const r = result as { rowCount?: number | null; affectedRows?: number };
  return Number(r.rowCount ?? r.affectedRows ?? 0);
}

/**
 * One tenant, one transaction: lock the chain head (appends wait), find the oldest entry inside the
 * retention window of the tenant's current tier, record it as the new start of the chain
 * (`first_seq`, and its `prev_hash` as `first_prev_hash`), then delete everything before it, the
 * only deletion the append-only trigger lets through. The retained chain still verifies from its
 * first entry. With nothing left inside the window the start moves past the head (`seq + 1`,
 * `hash`), so the next append continues a chain that verifies.
 */
export async function pruneTenant(db: Db, tenantId: string, now: Date): Promise<number> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`SET LOCAL engram.audit_prune = 'on'`);
    const [head] = await rows<{ seq: string | number; hash: string; first_seq: string | number; days: number }>(
      tx,
      sql`SELECT h.seq, h.hash, h.first_seq, r.days
          FROM audit_heads h JOIN tenants t ON t.id = h.tenant_id JOIN ${retentionDays()} ON r.tier = t.tier
          WHERE h.tenant_id = ${tenantId}
          FOR UPDATE OF h`,
    );
    if (!head) return 0;
    const cutoff = new Date(now.getTime() - Number(head.days) * DAY);
    const [keep] = await rows<{ seq: string | number; prev_hash: string }>(
      tx,
      sql`SELECT seq, prev_hash FROM audit_log
          WHERE tenant_id = ${tenantId} AND created_at >= ${cutoff.toISOString()}::timestamptz
          ORDER BY seq LIMIT 1`,
    );
    const firstSeq = keep ? Number(keep.seq) : Number(head.seq) + 1;
    const firstPrevHash = keep ? keep.prev_hash : head.hash;
    if (firstSeq <= Number(head.first_seq)) return 0;
    await tx.execute(sql`UPDATE audit_heads SET first_seq = ${firstSeq}, first_prev_hash = ${firstPrevHash} WHERE tenant_id = ${tenantId}`);
    return affected(await tx.execute(sql`DELETE FROM audit_log WHERE tenant_id = ${tenantId} AND seq < ${firstSeq}`));
  });
}

/**
 * Scheduled retention: every tenant whose first retained entry is older than its tier allows
 * (found in SQL by joining the chain heads with tenants.tier), pruned one transaction each. A
 * tenant that fails does not stop the others; the task reports the failures at the end.
 */
export const pruneAuditRetention: MaintenanceTask = async ({ services, now }) => {
  const { db } = services;
  let deleted = 0;
  let after = '';
  const failed: { tenantId: string; error: string }[] = [];
  for (;;) {
    const due = await rows<{ tenant_id: string }>(
      db,
      sql`SELECT h.tenant_id
          FROM audit_heads h
          JOIN tenants t ON t.id = h.tenant_id
          JOIN ${retentionDays()} ON r.tier = t.tier
          JOIN audit_log a ON a.tenant_id = h.tenant_id AND a.seq = h.first_seq
          WHERE h.tenant_id > ${after}
            AND a.created_at < ${now.toISOString()}::timestamptz - make_interval(days => r.days)
          ORDER BY h.tenant_id
          LIMIT ${TENANTS_PER_QUERY}`,
    );
    for (const { tenant_id } of due) {
      try {
        deleted += await pruneTenant(db, tenant_id, now);
      } catch (err) {
        failed.push({ tenantId: tenant_id, error: err instanceof Error ? err.message : String(err) });
      }
    }
    if (due.length < TENANTS_PER_QUERY) break;
    after = due[due.length - 1].tenant_id;
  }
  if (failed.length) {
    throw new Error(
      `audit retention failed for ${failed.length} tenant(s): ${failed
        .slice(0, 5)
        .map((f) => `${f.tenantId}: ${f.error}`)
        .join('; ')}`,
    );
  }
  return deleted;
};
