import { and, asc, count, desc, eq, inArray } from 'drizzle-orm';
import { sql } from '../platform/data/db';
import { auditLog, memoryHolds } from '../../schema';
import { reviewerMemberships } from '../control/approvals';
import type { TenantCtx } from '../platform/contract/context';
import { toUrn } from '../platform/contract/ids';
import type { Tier } from '../platform/contract/tiers';
import { type DbOrTx, pgArray, rows, type Tx } from '../platform/data/db';
import type { PageInput } from '../platform/data/pagination';

/**
 * Held memory writes (docs/governed-memories.md): a memory write a policy of step type `memory`
 * holds for review waits in `memory_holds`, never in `memories`, so no read path can leak it. The
 * memories family writes and decides them; the actions family lists them in the approvals queue and
 * hands decisions on them to the memories family through `holdDecider` (families never import each other).
 */
export type HoldRow = typeof memoryHolds.$inferSelect;
export type NewHold = typeof memoryHolds.$inferInsert;

/** Pending held memories a tenant may have at once: one key cannot pile up unbounded pending rows. */
const MAX_HOLDS: Record<Tier, number> = { free: 100, starter: 1_000, pro: 5_000, enterprise: 10_000 };

/** The cap on a tenant's pending held memories, counted under `holdsLock` with the insert (enforceLimit). */
export const heldMemoryLimit = {
  metric: 'held_memories',
  max: (tier: Tier) => MAX_HOLDS[tier],
  lock: (ctx: TenantCtx) => `memory-holds:${ctx.tenantId}`,
  count: (tx: Tx, ctx: TenantCtx) => countHolds(tx, ctx.tenantId),
  message: (max: number, tier: Tier) =>
    `The ${tier} tier keeps at most ${max} memories held for review: decide some in GET /v1/approvals before more can be held`,
};

export async function countHolds(db: DbOrTx, tenantId: string): Promise<number> {
  const [{ n }] = await db.select({ n: count() }).from(memoryHolds).where(eq(memoryHolds.tenantId, tenantId));
  return Number(n);
}

export async function insertHold(db: DbOrTx, row: NewHold) {
  await db.insert(memoryHolds).values(row);
}

/** One held memory of the tenant; `lock` takes it FOR UPDATE, so concurrent decisions go one at a time. */
export async function holdOf(db: DbOrTx, tenantId: string, id: string, lock = false): Promise<HoldRow | null> {
  const query = db
    .select()
    .from(memoryHolds)
    .where(and(eq(memoryHolds.tenantId, tenantId), eq(memoryHolds.id, id)));
  const [row] = lock ? await query.for('update') : await query;
  return row ?? null;
}

/**
 * A held memory `deciderTenantId` may decide: one of its own, or, when it was held in team or
 * enterprise mode, one of a writer whose approval team it is in (the actions' rule,
 * approvals.reviewerMemberships), so anyone else's lookup finds nothing, as for an unknown id.
 * `lock` takes it FOR UPDATE: concurrent decisions go one at a time.
 */
export async function holdFor(db: DbOrTx, deciderTenantId: string, id: string, lock = false): Promise<HoldRow | null> {
  const reviews = sql`EXISTS (${reviewerMemberships(sql`${memoryHolds.tenantId}`, deciderTenantId)})`;
  const query = db
    .select()
    .from(memoryHolds)
    .where(
      and(
        eq(memoryHolds.id, id),
        sql`(${memoryHolds.tenantId} = ${deciderTenantId} OR (${memoryHolds.approvalMode} IN ('team', 'enterprise') AND ${reviews}))`,
      ),
    );
  const [row] = lock ? await query.for('update') : await query;
  return row ?? null;
}

/**
 * The held memories `reviewerTenantId` reviews for others (GET /v1/approvals?scope=team): those of
 * the tenants whose approval team it is in, held in team or enterprise mode, oldest first.
 */
export async function teamHoldsPage(db: DbOrTx, reviewerTenantId: string, page: PageInput, opts: { id?: string } = {}) {
  const where = and(
    sql`${memoryHolds.tenantId} <> ${reviewerTenantId}`,
    sql`${memoryHolds.approvalMode} IN ('team', 'enterprise')`,
    sql`EXISTS (${reviewerMemberships(sql`${memoryHolds.tenantId}`, reviewerTenantId)})`,
    opts.id ? eq(memoryHolds.id, opts.id) : undefined,
  );
  const [found, [{ n }]] = await Promise.all([
    db.select().from(memoryHolds).where(where).orderBy(asc(memoryHolds.createdAt), asc(memoryHolds.id)).limit(page.limit).offset(page.offset),
    db.select({ n: count() }).from(memoryHolds).where(where),
  ]);
  return { page: found, total: Number(n) };
}

/** Appends a decision to a held memory's (enterprise mode counts them until one completes it). */
export async function recordHoldDecision(db: DbOrTx, tenantId: string, id: string, decision: HoldRow['decisions'][number]) {
  await db
    .update(memoryHolds)
    .set({ decisions: sql`${memoryHolds.decisions} || ${JSON.stringify([decision])}::jsonb` })
    .where(and(eq(memoryHolds.tenantId, tenantId), eq(memoryHolds.id, id)));
}

/** Distinct approving tenants of a held memory so far (what enterprise mode counts). */
export const holdApprovals = (row: HoldRow) => new Set(row.decisions.filter((d) => d.decision === 'approve').map((d) => d.approverTenantId)).size;

export async function deleteHold(db: DbOrTx, tenantId: string, id: string) {
  await db.delete(memoryHolds).where(and(eq(memoryHolds.tenantId, tenantId), eq(memoryHolds.id, id)));
}

/** A page of the tenant's held memories, oldest first (`agentId`: only that agent's, for a confined key). */
export async function holdsPage(db: DbOrTx, tenantId: string, page: PageInput, opts: { id?: string; agentId?: string | null } = {}) {
  const where = and(
    eq(memoryHolds.tenantId, tenantId),
    opts.id ? eq(memoryHolds.id, opts.id) : undefined,
    opts.agentId ? eq(memoryHolds.agentId, opts.agentId) : undefined,
  );
  const [found, [{ n }]] = await Promise.all([
    db.select().from(memoryHolds).where(where).orderBy(asc(memoryHolds.createdAt), asc(memoryHolds.id)).limit(page.limit).offset(page.offset),
    db.select({ n: count() }).from(memoryHolds).where(where),
  ]);
  return { page: found, total: Number(n) };
}

/** A held memory as the approvals queue shows it. */
export function heldEntry(row: HoldRow) {
  const input = row.input as { observation: string; tags?: string[]; space_id?: string | null };
  const result = row.policyResult as { reason?: string };
  return {
    kind: 'memory' as const,
    approval_id: toUrn(row.id),
    memory_id: toUrn(row.id),
    observation: input.observation,
    tags: input.tags ?? [],
    space_id: input.space_id ?? null,
    source: row.source,
    trust: row.trust,
    agent_id: row.agentId,
    status: 'pending_review' as const,
    submitted_at: row.createdAt.toISOString(),
    risk_score: row.riskScore,
    approval_mode: row.approvalMode,
    policy_result: row.policyResult,
    reason: result.reason ?? null,
    submitted_by_key_id: row.keyId,
  };
}

/**
 * The status of a memory write a rule held, as GET /v1/actions/{action_id} (MCP `action_status`)
 * answers for its approval id: `pending_review` while held, then what its decision recorded (the
 * held row is gone by then; the audit entry `memory.approved` or `memory.denied` keeps the facts).
 * Null for an id that was never held in the tenant. `agentId` of a key confined to an agent.
 */
export async function heldMemoryStatus(db: DbOrTx, tenantId: string, id: string) {
  const held = await holdOf(db, tenantId, id);
  if (held) {
    const entry = heldEntry(held);
    return {
      ...statusOf(entry.agent_id, entry.approval_mode),
      status: 'pending_review' as const,
      reason: entry.reason,
      submitted_at: entry.submitted_at,
      risk_score: entry.risk_score,
      decided_at: null,
      memory_id: null,
    };
  }
  const [decided] = await db
    .select({ operation: auditLog.operation, createdAt: auditLog.createdAt, metadata: auditLog.metadata })
    .from(auditLog)
    .where(and(eq(auditLog.tenantId, tenantId), eq(auditLog.resourceId, id), inArray(auditLog.operation, ['memory.approved', 'memory.denied'])))
    .orderBy(desc(auditLog.seq))
    .limit(1);
  if (!decided) return null;
  const facts = decided.metadata as {
    agent_id?: string | null;
    approval_mode?: HoldRow['approvalMode'];
    reason?: string | null;
    submitted_at?: string;
    risk_score?: number | null;
  };
  const approved = decided.operation === 'memory.approved';
  return {
    ...statusOf(facts.agent_id ?? null, facts.approval_mode ?? 'solo'),
    status: approved ? ('approved' as const) : ('denied' as const),
    reason: facts.reason ?? null,
    // Decisions audited before the facts carried the write time answer with the decision's.
    submitted_at: facts.submitted_at ?? decided.createdAt.toISOString(),
    risk_score: facts.risk_score ?? null,
    decided_at: decided.createdAt.toISOString(),
    memory_id: approved ? toUrn(id) : null,
  };

  function statusOf(agentId: string | null, approvalMode: HoldRow['approvalMode']) {
    return {
      action_id: toUrn(id),
      kind: 'memory' as const,
      action: 'memory.store',
      connector: null,
      operation: 'store',
      agent_id: agentId,
      approval_mode: approvalMode,
    };
  }
}

/** A decision on a held memory, as the approvals route takes it. */
export interface HoldDecision {
  approvalId: string;
  decision: 'approve' | 'deny';
  reason: string | null;
  approverId: string;
}

export interface HoldDecider {
  decide(
    ctx: TenantCtx,
    input: HoldDecision,
  ): Promise<{
    approval_id: string;
    kind: 'memory';
    decision: 'approve' | 'deny';
    reason: string | null;
    status: 'approved' | 'denied' | 'pending_review';
    approver_id: string;
    decided_by_key_id: string;
    approvals: number;
    approvals_required: number;
    decided_at: string | null;
    memory_id: string | null;
  }>;
}

let decider: HoldDecider | null = null;

/** The memories family hands its decision on held memories here when its module loads (as store-port.ts). */
export const provideHoldDecider = (d: HoldDecider) => {
  decider = d;
};

export function holdDecider(): HoldDecider {
  if (!decider) throw new Error('the memories family did not provide its held-memory decisions');
  return decider;
}

/**
 * Erasure (docs/security.md#erasure): the tenant's held memories that match what an erasure selects
 * (ids, agent, any of the tags, space, written before), counted, and unless a dry run, deleted. A
 * held memory is content the account holds, so an erasure reaches it as it reaches a stored one.
 */
export async function eraseHolds(
  db: DbOrTx,
  tenantId: string,
  s: { memoryIds?: string[]; agentId?: string; tags?: string[]; spaceId?: string; before?: Date },
  dryRun: boolean,
): Promise<number> {
  const parts = [sql`h.tenant_id = ${tenantId}`];
  if (s.memoryIds) parts.push(sql`h.id = ANY(${pgArray(s.memoryIds)}::uuid[])`);
  if (s.agentId !== undefined) parts.push(sql`h.agent_id = ${s.agentId}`);
  if (s.tags?.length) parts.push(sql`jsonb_exists_any(coalesce(h.input -> 'tags', '[]'::jsonb), ${pgArray(s.tags)}::text[])`);
  if (s.spaceId) parts.push(sql`h.input ->> 'space_id' = ${s.spaceId}`);
  if (s.before) parts.push(sql`h.created_at < ${s.before.toISOString()}::timestamptz`);
  const where = sql.join(parts, sql` AND `);
  const [{ n }] = await rows<{ n: number | string }>(
    db,
    dryRun
      ? sql`SELECT count(*) AS n FROM memory_holds h WHERE ${where}`
      : sql`WITH d AS (DELETE FROM memory_holds h WHERE ${where} RETURNING 1) SELECT count(*) AS n FROM d`,
  );
  return Number(n);
}
