import { desc, eq, sql } from 'drizzle-orm';
import { mailOutbox, tenants } from '../../schema';
import type { DbOrTx } from '../../shared/platform/data/db';
import type { Tier } from '../../shared/platform/contract/tiers';

/** The operator's view: tenants by id or e-mail (the operator acts across tenants), and stored mail. */
export async function findTenant(db: DbOrTx, tenantId: string, lock = false) {
  const query = db.select().from(tenants).where(eq(tenants.id, tenantId));
  const [tenant] = lock ? await query.for('update') : await query;
  return tenant ?? null;
}

export async function findTenantByEmail(db: DbOrTx, email: string) {
  const [tenant] = await db.select({ id: tenants.id }).from(tenants).where(sql`lower(${tenants.email}) = ${email}`);
  return tenant ?? null;
}

export async function setTier(tx: DbOrTx, tenantId: string, tier: Tier, now: Date) {
  const [after] = await tx.update(tenants).set({ tier, updatedAt: now }).where(eq(tenants.id, tenantId)).returning();
  return after;
}

export function mailTo(db: DbOrTx, email: string, limit: number) {
  return db.select().from(mailOutbox).where(sql`lower(${mailOutbox.toEmail}) = ${email}`).orderBy(desc(mailOutbox.createdAt), desc(mailOutbox.id)).limit(limit);
}
