import { and, asc, count, desc, eq, inArray, lt, type SQL, sql } from 'drizzle-orm';
import { actionDecisions, actions, auditLog, controlSettings } from '../../schema';
import type { ActionState } from '../../schema/actions';
import { reviewerMemberships } from '../../shared/control/approvals';
import type { ControlSettings } from '../../shared/control/settings';
import { snapshotSettings, statesHolding } from '../../shared/memory/edge-history';
import { eventAfter } from '../../shared/memory/history';
import type { MemoryDto } from '../../shared/memory/rows';
import { type DbOrTx, rows } from '../../shared/platform/data/db';
import type { PageInput } from '../../shared/platform/data/pagination';

export type ActionRow = typeof actions.$inferSelect;
export { decisionsOf, updateAction } from '../../shared/control/approvals';
export type { DecisionRow } from '../../shared/control/approvals';
import type { DecisionRow } from '../../shared/control/approvals';

/** Inserts a complete row (no RETURNING: the caller has every field already). */
export async function insertAction(db: DbOrTx, row: ActionRow): Promise<ActionRow> {
  await db.insert(actions).values(row);
  return row;
}

/** An action of the tenant; `lock` holds its row until the transaction ends (one decision at a time). */
export async function actionOf(db: DbOrTx, tenantId: string, actionId: string, lock = false): Promise<ActionRow | null> {
  const query = db
    .select()
    .from(actions)
    .where(and(eq(actions.tenantId, tenantId), eq(actions.id, actionId)));
  const [found] = lock ? await query.for('update') : await query;
  return found ?? null;
}

/** What a queue page may be narrowed to: a status, one approval. */
export interface QueueFilter {
  status?: ActionState;
  actionId?: string;
}

const queueFilter = (filter: QueueFilter): SQL[] => [
  ...(filter.status ? [eq(actions.status, filter.status)] : []),
  ...(filter.actionId ? [eq(actions.id, filter.actionId)] : []),
];

/**
 * The decisions on a page of actions, in one query whatever the page size, each action's in the
 * order they were taken. Each action's decisions are read under its own tenant (the submitter's).
 */
export async function decisionsFor(db: DbOrTx, page: Pick<ActionRow, 'id' | 'tenantId'>[]): Promise<DecisionRow[]> {
  if (!page.length) return [];
  return db
    .select()
    .from(actionDecisions)
    .where(
      and(
        inArray(
          actionDecisions.actionId,
          page.map((row) => row.id),
        ),
        inArray(actionDecisions.tenantId, [...new Set(page.map((row) => row.tenantId))]),
      ),
    )
    .orderBy(asc(actionDecisions.createdAt), asc(actionDecisions.id));
}

/** The approval queue: actions that were ever pending, in the order of their latest audit entry. */
export async function queue(db: DbOrTx, tenantId: string, filter: QueueFilter, page: PageInput) {
  const where: SQL[] = [eq(actions.tenantId, tenantId), eq(actions.reviewable, true), ...queueFilter(filter)];
  const [found, [{ n }]] = await Promise.all([
    db
      .select()
      .from(actions)
      .where(and(...where))
      .orderBy(asc(actions.lastSeq))
      .limit(page.limit)
      .offset(page.offset),
    db
      .select({ n: count() })
      .from(actions)
      .where(and(...where)),
  ]);
  return { page: found, total: Number(n) };
}

/**
 * The team review queue of `reviewerTenantId`: actions of the other tenants whose approval team it
 * is in, submitted in team or enterprise mode (the ones it may decide, or see decided), oldest
 * submission first. The same rule as for a decision (approvals.reviewerMemberships).
 */
export async function teamQueue(db: DbOrTx, reviewerTenantId: string, filter: QueueFilter, page: PageInput) {
  const teammates = sql`${actions.tenantId} <> ${reviewerTenantId} AND EXISTS (${reviewerMemberships(sql`${actions.tenantId}`, reviewerTenantId)})`;
  const where: SQL[] = [eq(actions.reviewable, true), sql`${actions.approvalMode} IN ('team', 'enterprise')`, teammates, ...queueFilter(filter)];
  const [found, [{ n }]] = await Promise.all([
    db
      .select()
      .from(actions)
      .where(and(...where))
      .orderBy(asc(actions.submittedAt), asc(actions.id))
      .limit(page.limit)
      .offset(page.offset),
    db
      .select({ n: count() })
      .from(actions)
      .where(and(...where)),
  ]);
  return { page: found, total: Number(n) };
}

/** Pending actions submitted before `before`, oldest first, of every tenant (maintenance). */
export async function stalePending(db: DbOrTx, before: Date, limit: number): Promise<{ id: string; tenantId: string }[]> {
  return db
    .select({ id: actions.id, tenantId: actions.tenantId })
    .from(actions)
    .where(and(eq(actions.status, 'pending_review'), lt(actions.submittedAt, before)))
    .orderBy(asc(actions.submittedAt))
    .limit(limit);
}

export async function saveSettings(db: DbOrTx, tenantId: string, s: ControlSettings, now: Date) {
  const values = {
    approvalMode: s.approval_mode,
    evaluationMode: s.evaluation_mode,
    minApprovals: s.min_approvals,
    requireManager: s.require_manager,
    allowedRoles: s.allowed_roles,
    memoryGuard: s.memory_guard,
    updatedAt: now,
  };
  await db
    .insert(controlSettings)
    .values({ tenantId, ...values })
    .onConflictDoUpdate({ target: controlSettings.tenantId, set: values });
}

export async function settingsRow(db: DbOrTx, tenantId: string) {
  const [row] = await db.select().from(controlSettings).where(eq(controlSettings.tenantId, tenantId));
  return row ?? null;
}

/** The audit entries about an action, in chain order (the partial index audit_log_action_idx). */
export async function auditTrail(db: DbOrTx, tenantId: string, actionId: string) {
  return db
    .select({
      seq: auditLog.seq,
      createdAt: auditLog.createdAt,
      operation: auditLog.operation,
      entryHash: auditLog.entryHash,
      actor: auditLog.actor,
      metadata: auditLog.metadata,
    })
    .from(auditLog)
    .where(and(eq(auditLog.tenantId, tenantId), eq(auditLog.resourceType, 'action'), eq(auditLog.resourceId, actionId)))
    .orderBy(asc(auditLog.seq));
}

/**
 * The tenant's memories as they were at `at` (the replay interval tables, shared/memory), newest
 * first, at most `limit`, and how many there were.
 */
export async function memoriesAt(db: DbOrTx, tenantId: string, at: Date, limit: number) {
  const [result] = await db.transaction(async (tx) => {
    await snapshotSettings(tx);
    return rows<{ total: number | string; memories: MemoryDto[] | string }>(
      tx,
      sql`WITH present AS MATERIALIZED (${statesHolding(tenantId, at)}),
          page AS (SELECT p.memory_id, p.id, p.created_at FROM present p ORDER BY p.created_at DESC, p.memory_id DESC LIMIT ${limit})
          SELECT (SELECT count(*) FROM present) AS total,
                 (SELECT coalesce(json_agg(${eventAfter('e')} ORDER BY p.created_at DESC, p.memory_id DESC), '[]'::json) FROM page p JOIN memory_events e ON e.id = p.id) AS memories`,
    );
  });
  const memories = typeof result.memories === 'string' ? (JSON.parse(result.memories) as MemoryDto[]) : result.memories;
  return { total: Number(result.total), memories };
}

/**
 * The memories the key `keyId` recalled in (at − windowMs, at], most recently recalled first, at
 * most `limit`: each as it was when recalled (its latest state event by then), with the query of
 * its latest recall and how many times it was recalled. Recall events (memory_events kind `recall`)
 * name the recalling key as their actor; the window bounds the scan.
 */
export async function recalledBefore(db: DbOrTx, tenantId: string, keyId: string, at: Date, windowMs: number, limit: number) {
  const to = at.toISOString();
  const from = new Date(at.getTime() - windowMs).toISOString();
  const found = await rows<{
    memory_id: string;
    recalled_at: string | Date;
    query: string | null;
    recalls: number | string;
    memory: MemoryDto | string | null;
  }>(
    db,
    sql`WITH r AS (
          SELECT e.memory_id, max(e.at) AS recalled_at, count(*) AS recalls,
                 (array_agg(e.metadata->>'query' ORDER BY e.at DESC, e.id DESC))[1] AS query
          FROM memory_events e
          WHERE e.tenant_id = ${tenantId} AND e.kind = 'recall' AND e.actor = ${keyId}
            AND e.at > ${from}::timestamptz AND e.at <= ${to}::timestamptz
          GROUP BY e.memory_id ORDER BY max(e.at) DESC, e.memory_id LIMIT ${limit})
        SELECT r.memory_id::text AS memory_id, r.recalled_at, r.query, r.recalls, s.after AS memory
        FROM r LEFT JOIN LATERAL (
          SELECT ${eventAfter('e')} AS after FROM memory_events e
          WHERE e.tenant_id = ${tenantId} AND e.memory_id = r.memory_id AND e.at <= r.recalled_at
            AND e.kind NOT IN ('recall', 'link', 'unlink')
          ORDER BY e.at DESC, e.id DESC LIMIT 1) s ON true
        ORDER BY r.recalled_at DESC, r.memory_id`,
  );
  return found.flatMap((r) => {
    const memory = typeof r.memory === 'string' ? (JSON.parse(r.memory) as MemoryDto) : r.memory;
    if (!memory) return [];
    return [{ memory, recalledAt: new Date(r.recalled_at), query: r.query, recalls: Number(r.recalls) }];
  });
}

const violationsOf = sql`jsonb_array_elements(CASE WHEN jsonb_typeof(a.policy_result->'violations') = 'array' THEN a.policy_result->'violations' ELSE '[]'::jsonb END)`;

/** The dashboard's numbers for [since, until): totals, violations by policy and by agent, a series. */
export async function dashboard(db: DbOrTx, tenantId: string, since: Date, until: Date, bucket: 'hour' | 'day') {
  const bucketSeconds = bucket === 'hour' ? 3_600 : 86_400;
  const window = sql`a.tenant_id = ${tenantId} AND a.submitted_at >= ${since.toISOString()}::timestamptz AND a.submitted_at < ${until.toISOString()}::timestamptz`;
  const [totals, byStatus, byPolicy, byAgent, series] = await Promise.all([
    rows<{ outcome: string; shadow: boolean; n: number | string; violations: number | string }>(
      db,
      sql`SELECT a.outcome, a.evaluation_mode = 'shadow' AS shadow, count(*) AS n, coalesce(sum(a.violation_count), 0) AS violations
          FROM actions a WHERE ${window} GROUP BY 1, 2`,
    ),
    rows<{ status: string; n: number | string }>(db, sql`SELECT a.status, count(*) AS n FROM actions a WHERE ${window} GROUP BY 1`),
    rows<{ policy: string; n: number | string; blocked: number | string; held: number | string }>(
      db,
      sql`SELECT v->>'policy' AS policy, count(*) AS n,
                 count(*) FILTER (WHERE v->>'on_violation' = 'block') AS blocked,
                 count(*) FILTER (WHERE v->>'on_violation' = 'require_approval') AS held
          FROM actions a, ${violationsOf} v WHERE ${window} GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 100`,
    ),
    rows<{ agent_id: string | null; n: number | string; actions: number | string }>(
      db,
      sql`SELECT a.agent_id, sum(a.violation_count) AS n, count(*) AS actions
          FROM actions a WHERE ${window} AND a.violation_count > 0 GROUP BY 1 ORDER BY 2 DESC, 1 NULLS LAST LIMIT 100`,
    ),
    // Buckets as epoch seconds: UTC hours and days are whole multiples of their length since 1970.
    rows<{ at: number | string; outcome: string; n: number | string; violations: number | string }>(
      db,
      sql`SELECT (floor(extract(epoch FROM a.submitted_at) / ${bucketSeconds}) * ${bucketSeconds})::bigint AS at, a.outcome, count(*) AS n,
                 coalesce(sum(a.violation_count), 0) AS violations
          FROM actions a WHERE ${window} GROUP BY 1, 2`,
    ),
  ]);
  return { totals, byStatus, byPolicy, byAgent, series };
}

/** An agent's actions with violations in [since, until], newest first, and how many there are. */
export async function agentViolations(db: DbOrTx, tenantId: string, agentId: string, since: Date, until: Date, page: PageInput) {
  const where = and(
    eq(actions.tenantId, tenantId),
    eq(actions.agentId, agentId),
    sql`${actions.submittedAt} >= ${since.toISOString()}::timestamptz`,
    sql`${actions.submittedAt} <= ${until.toISOString()}::timestamptz`,
    sql`${actions.violationCount} > 0`,
  );
  const [found, [{ n, violations }]] = await Promise.all([
    db.select().from(actions).where(where).orderBy(sql`${actions.submittedAt} DESC`, sql`${actions.id} DESC`).limit(page.limit).offset(page.offset),
    db
      .select({ n: count(), violations: sql<number | string>`coalesce(sum(${actions.violationCount}), 0)` })
      .from(actions)
      .where(where),
  ]);
  return { page: found, total: Number(n), violations: Number(violations) };
}

/** The tenant's submitted actions, newest first (the console's list), and their total. */
/** The tenant's actions, newest first; only `agentId`'s for a key confined to that agent. */
export async function recentActions(db: DbOrTx, tenantId: string, page: PageInput, agentId: string | null = null) {
  const where = agentId === null ? eq(actions.tenantId, tenantId) : and(eq(actions.tenantId, tenantId), eq(actions.agentId, agentId));
  const [found, [{ n }]] = await Promise.all([
    db.select().from(actions).where(where).orderBy(desc(actions.submittedAt), desc(actions.id)).limit(page.limit).offset(page.offset),
    db.select({ n: count() }).from(actions).where(where),
  ]);
  return { page: found, total: Number(n) };
}
