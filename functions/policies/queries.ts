import { and, asc, count, eq, isNull, or, sql } from 'drizzle-orm';
import { policies } from '../../schema';
import type { PolicyRow } from '../../shared/control/policy-set';
import type { DbOrTx } from '../../shared/platform/data/db';

export type { PolicyRow };

const scope = (agentId: string | null) => (agentId === null ? isNull(policies.agentId) : eq(policies.agentId, agentId));

/** The tenant's policy of that name at one scope (tenant-wide when `agentId` is null), enabled or not. */
export async function policyAt(db: DbOrTx, tenantId: string, name: string, agentId: string | null): Promise<PolicyRow | null> {
  const [found] = await db
    .select()
    .from(policies)
    .where(and(eq(policies.tenantId, tenantId), eq(policies.name, name), scope(agentId)));
  return found ?? null;
}

/** Tenant-wide policies, plus one agent's when `agentId` is given: by name, tenant-wide first. */
export async function listPolicies(db: DbOrTx, tenantId: string, agentId: string | null): Promise<PolicyRow[]> {
  const where = agentId === null ? isNull(policies.agentId) : or(isNull(policies.agentId), eq(policies.agentId, agentId));
  return db
    .select()
    .from(policies)
    .where(and(eq(policies.tenantId, tenantId), where))
    .orderBy(asc(policies.name), sql`${policies.agentId} NULLS FIRST`);
}

/** Enabled custom policies of the tenant, every scope: what the tier's custom policy limit counts. */
export async function countEnabled(db: DbOrTx, tenantId: string): Promise<number> {
  const [{ n }] = await db
    .select({ n: count() })
    .from(policies)
    .where(and(eq(policies.tenantId, tenantId), eq(policies.enabled, true)));
  return Number(n);
}

export async function insertPolicy(db: DbOrTx, row: typeof policies.$inferInsert): Promise<PolicyRow> {
  const [created] = await db.insert(policies).values(row).returning();
  return created;
}

export async function updatePolicy(
  db: DbOrTx,
  tenantId: string,
  id: string,
  changes: Partial<Pick<PolicyRow, 'description' | 'stepTypes' | 'whitelistedDomains' | 'rules' | 'enabled' | 'version' | 'updatedAt'>>,
): Promise<PolicyRow> {
  const [updated] = await db
    .update(policies)
    .set(changes)
    .where(and(eq(policies.tenantId, tenantId), eq(policies.id, id)))
    .returning();
  return updated;
}
