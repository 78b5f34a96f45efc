import { asc, eq } from 'drizzle-orm';
import { milestones } from '../../schema';
import type { DbOrTx } from '../../shared/platform/data/db';

export async function listMilestones(db: DbOrTx, tenantId: string) {
  return db.select().from(milestones).where(eq(milestones.tenantId, tenantId)).orderBy(asc(milestones.achievedAt));
}
