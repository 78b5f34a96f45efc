import { and, asc, count, desc, eq, gt, lt, type SQL } from 'drizzle-orm';
import { traces, traceSigningKeys, traceSteps } from '../../schema';
import type { DbOrTx } from '../../shared/platform/data/db';
import type { PageInput } from '../../shared/platform/data/pagination';

export type TraceRow = typeof traces.$inferSelect;
export type StepRow = typeof traceSteps.$inferSelect;
export type SealedFields = Pick<
  TraceRow,
  'status' | 'integrityRootHash' | 'signature' | 'signatureAlgorithm' | 'keyId' | 'signedAt' | 'completedAt' | 'certificateSignature'
>;

export async function insertTrace(db: DbOrTx, row: typeof traces.$inferInsert): Promise<TraceRow> {
  const [created] = await db.insert(traces).values(row).returning();
  return created;
}

/** A trace of the tenant; `lock` holds its row (the chain head) until the transaction ends. */
export async function traceOf(db: DbOrTx, tenantId: string, traceId: string, lock = false): Promise<TraceRow | null> {
  const query = db
    .select()
    .from(traces)
    .where(and(eq(traces.tenantId, tenantId), eq(traces.id, traceId)));
  const [found] = lock ? await query.for('update') : await query;
  return found ?? null;
}

export async function listTraces(db: DbOrTx, tenantId: string, filter: { agent_id?: string; status?: TraceRow['status'] }, page: PageInput) {
  const where: SQL[] = [eq(traces.tenantId, tenantId)];
  if (filter.agent_id) where.push(eq(traces.agentId, filter.agent_id));
  if (filter.status) where.push(eq(traces.status, filter.status));
  const [found, [{ n }]] = await Promise.all([
    db
      .select()
      .from(traces)
      .where(and(...where))
      .orderBy(desc(traces.createdAt), desc(traces.id))
      .limit(page.limit)
      .offset(page.offset),
    db
      .select({ n: count() })
      .from(traces)
      .where(and(...where)),
  ]);
  return { page: found, total: Number(n) };
}

export async function insertStep(db: DbOrTx, row: typeof traceSteps.$inferInsert): Promise<StepRow> {
  const [created] = await db.insert(traceSteps).values(row).returning();
  return created;
}

/** Moves the chain head after a step was appended. */
export async function advanceTrace(db: DbOrTx, tenantId: string, traceId: string, head: { stepCount: number; lastChainHash: string; at: Date }) {
  await db
    .update(traces)
    .set({ stepCount: head.stepCount, lastChainHash: head.lastChainHash, lastActivityAt: head.at })
    .where(and(eq(traces.tenantId, tenantId), eq(traces.id, traceId)));
}

export async function sealTrace(
  db: DbOrTx,
  tenantId: string,
  traceId: string,
  sealed: SealedFields & { stepCount: number; lastChainHash: string | null },
): Promise<TraceRow> {
  const [updated] = await db
    .update(traces)
    .set({ ...sealed, lastActivityAt: sealed.completedAt! })
    .where(and(eq(traces.tenantId, tenantId), eq(traces.id, traceId)))
    .returning();
  return updated;
}

/** Marks the step an interruption cut short (not part of its hash: the seal's signature covers the chain). */
export async function flagInterrupted(db: DbOrTx, tenantId: string, traceId: string, stepIndex: number) {
  await db
    .update(traceSteps)
    .set({ wasInterrupted: true })
    .where(and(eq(traceSteps.tenantId, tenantId), eq(traceSteps.traceId, traceId), eq(traceSteps.stepIndex, stepIndex)));
}

export async function stepsOf(db: DbOrTx, tenantId: string, traceId: string, page: PageInput): Promise<StepRow[]> {
  return db
    .select()
    .from(traceSteps)
    .where(and(eq(traceSteps.tenantId, tenantId), eq(traceSteps.traceId, traceId)))
    .orderBy(asc(traceSteps.stepIndex))
    .limit(page.limit)
    .offset(page.offset);
}

/** Steps in index order after `afterIndex`, a batch at a time (a trace may hold 10,000 steps of 64 KB). */
export async function stepsAfter(db: DbOrTx, tenantId: string, traceId: string, afterIndex: number, limit: number): Promise<StepRow[]> {
  return db
    .select()
    .from(traceSteps)
    .where(and(eq(traceSteps.tenantId, tenantId), eq(traceSteps.traceId, traceId), gt(traceSteps.stepIndex, afterIndex)))
    .orderBy(asc(traceSteps.stepIndex))
    .limit(limit);
}

/** Every step's hashes in order, without the contents: what a certificate carries. */
export async function stepHashes(db: DbOrTx, tenantId: string, traceId: string) {
  return db
    .select({ step_index: traceSteps.stepIndex, type: traceSteps.type, integrity_hash: traceSteps.integrityHash, chain_hash: traceSteps.chainHash })
    .from(traceSteps)
    .where(and(eq(traceSteps.tenantId, tenantId), eq(traceSteps.traceId, traceId)))
    .orderBy(asc(traceSteps.stepIndex));
}

export async function publicKeyOf(db: DbOrTx, keyId: string): Promise<string | null> {
  const [found] = await db.select({ pem: traceSigningKeys.publicKey }).from(traceSigningKeys).where(eq(traceSigningKeys.keyId, keyId));
  return found?.pem ?? null;
}

/** Active traces without a step since `before`, oldest first (every tenant: maintenance). */
export async function idleTraces(db: DbOrTx, before: Date, limit: number): Promise<{ id: string; tenantId: string }[]> {
  return db
    .select({ id: traces.id, tenantId: traces.tenantId })
    .from(traces)
    .where(and(eq(traces.status, 'active'), lt(traces.lastActivityAt, before)))
    .orderBy(asc(traces.lastActivityAt))
    .limit(limit);
}
