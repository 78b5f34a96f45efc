import { type SQL } from 'drizzle-orm';
import { sql } from './db';
import type { DbOrTx } from './db';

export const MILESTONES = [
  'first_memory',
  'first_search',
  'first_rollback',
  'first_replay',
  'first_cortex',
  'first_space',
  'first_share',
  'first_webhook',
  'first_team',
] as const;
export type Milestone = (typeof MILESTONES)[number];

/** Records a milestone the first time only; later calls are no-ops (safe inside any write). */
export async function recordMilestone(db: DbOrTx, tenantId: string, milestone: Milestone, at: Date, metadata: Record<string, unknown> = {}): Promise<void> {
  await db.execute(milestoneInsert(tenantId, milestone, at, metadata));
}

/**
 * The statement of recordMilestone, to end a caller's data-modifying WITH (one round trip for both)
 * or to be one of its parts; `when` (SQL boolean) lets that statement decide whether it counts.
 */
export function milestoneInsert(tenantId: string, milestone: Milestone, at: Date, metadata: Record<string, unknown> = {}, when: SQL = sql`true`): SQL {
  return sql`
    INSERT INTO milestones (tenant_id, milestone, achieved_at, metadata)
    SELECT ${tenantId}, ${milestone}, ${at.toISOString()}::timestamptz, ${JSON.stringify(metadata)}::jsonb WHERE ${when}
    ON CONFLICT DO NOTHING`;
}
