import { SOLO_DELAY_MS, tooEarly } from '../../../shared/control/decide';
import { approvalNotFound } from '../../../shared/control/errors';
import { deleteHold, type HoldDecider, type HoldRow, holdOf } from '../../../shared/memory/holds';
import type { Source } from '../../../shared/memory/provenance';
import type { TenantCtx } from '../../../shared/platform/contract/context';
import { forbidden } from '../../../shared/platform/contract/errors';
import { parseUrn, toUrn } from '../../../shared/platform/contract/ids';
import { APPROVALS_WRITE, requireScope } from '../../../shared/platform/contract/scopes';
import { write } from '../../../shared/platform/data/unit-of-work';
import { prepare, type Prepared, type StoreInput } from './prepare';
import { writeStores } from './write';

/**
 * The key that wrote a held memory, as it wrote it: approving stores the memory as that key's write
 * (its agent and spaces, its audit entry and events naming it), in the approver's transaction.
 */
function writerOf(ctx: TenantCtx, hold: HoldRow): TenantCtx {
  const restriction = hold.restriction ?? undefined;
  return { ...ctx, actor: hold.keyId, auth: { ...ctx.auth, keyId: hold.keyId, restriction }, work: undefined };
}

/**
 * A decision on a held memory (docs/governed-memories.md), through POST /v1/approvals/{approval_id}/decision
 * like an action's: the key needs `approvals:write`; the key that wrote the memory never decides it;
 * in solo mode no decision comes before 5 seconds after the write. Approve runs the store path for
 * the held input as a write of its writer (quota, duplicates and auto-links as they stand now) and
 * audits `memory.create` under that key, then `memory.approved` naming the deciding key; deny
 * deletes the held input, audited `memory.denied`. One decision decides a held memory in every mode.
 */
export const holdDecisions: HoldDecider = {
  async decide(ctx, input) {
    requireScope(ctx.auth, APPROVALS_WRITE);
    const id = parseUrn(input.approvalId);
    const hold = id ? await holdOf(ctx.db, ctx.tenantId, id) : null;
    if (!id || !hold) throw approvalNotFound(input.approvalId);
    if (hold.keyId === ctx.auth.keyId) {
      throw forbidden('The key that wrote this memory cannot decide it: decide with another key of the account (a person, or the console)');
    }
    const elapsed = ctx.now.getTime() - hold.createdAt.getTime();
    if (hold.approvalMode === 'solo' && elapsed < SOLO_DELAY_MS) {
      throw tooEarly(SOLO_DELAY_MS - elapsed, 'Solo mode: a decision is taken 5 seconds after submission at the earliest');
    }
    const writer = writerOf(ctx, hold);
    // Checked and embedded before the transaction, as every store is: no lock waits on the provider.
    let prepared: Prepared[] = [];
    if (input.decision === 'approve') {
      ({ prepared } = await prepare(writer, [hold.input as unknown as StoreInput], true, { approved: { id, source: hold.source as unknown as Source } }));
    }
    return write(ctx, async (work) => {
      const locked = await holdOf(work.tx, ctx.tenantId, id, true);
      if (!locked) throw approvalNotFound(input.approvalId);
      let memoryId: string | null = null;
      if (input.decision === 'approve') {
        const outcomes = await writeStores(work.actingAs(writer), prepared, { first: false, separateCommit: false });
        const outcome = outcomes.get(0);
        if (outcome && outcome.ok === false) throw outcome.error;
        memoryId = toUrn(id);
      }
      await deleteHold(work.tx, ctx.tenantId, id);
      const status = input.decision === 'approve' ? ('approved' as const) : ('denied' as const);
      const facts = {
        approval_id: toUrn(id),
        kind: 'memory',
        agent_id: hold.agentId,
        submitted_by_key_id: hold.keyId,
        decision: input.decision,
        reason: input.reason,
        approver_id: input.approverId,
        decided_by_key_id: ctx.auth.keyId,
        approval_mode: hold.approvalMode,
        submitted_at: hold.createdAt.toISOString(),
        risk_score: hold.riskScore,
        status,
      };
      await work.audit({ operation: `memory.${status}`, resourceType: 'memory', resourceId: id, metadata: facts });
      return {
        approval_id: toUrn(id),
        kind: 'memory' as const,
        decision: input.decision,
        reason: input.reason,
        status,
        approver_id: input.approverId,
        decided_by_key_id: ctx.auth.keyId,
        approvals: status === 'approved' ? 1 : 0,
        approvals_required: 1,
        decided_at: ctx.now.toISOString(),
        memory_id: memoryId,
      };
    });
  },
};
