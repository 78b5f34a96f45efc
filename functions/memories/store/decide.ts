import { tallyDecision } from '../../../shared/control/decide';
import { approvalNotFound } from '../../../shared/control/errors';
import { deleteHold, type HoldDecider, type HoldRow, holdFor, recordHoldDecision } from '../../../shared/memory/holds';
import type { Source } from '../../../shared/memory/provenance';
import type { TenantCtx } from '../../../shared/platform/contract/context';
import { forbidden } from '../../../shared/platform/contract/errors';
import { parseUrn, toUrn } from '../../../shared/platform/contract/ids';
import { APPROVALS_WRITE, requireScope } from '../../../shared/platform/contract/scopes';
import { write } from '../../../shared/platform/data/unit-of-work';
import { tierOf } from '../queries/read';
import { prepare, type Prepared, type StoreInput } from './prepare';
import { writeStores } from './write';

/**
 * The key that wrote a held memory, as it wrote it, in its own tenant at that tenant's tier now:
 * approving stores the memory as that key's write (its quota, agent and spaces, its audit entry and
 * events naming it), in the approver's transaction, whoever of the writer's approval team decides.
 */
async function writerOf(ctx: TenantCtx, hold: HoldRow): Promise<TenantCtx> {
  const restriction = hold.restriction ?? undefined;
  const tier = hold.tenantId === ctx.tenantId ? ctx.tier : await tierOf(ctx.db, hold.tenantId);
  const email = hold.tenantId === ctx.tenantId ? ctx.auth.email : '';
  return {
    ...ctx,
    tenantId: hold.tenantId,
    tier,
    actor: hold.keyId,
    auth: { tenantId: hold.tenantId, keyId: hold.keyId, tier, email, restriction },
    work: undefined,
  };
}

/**
 * A decision on a held memory (docs/governed-memories.md), through POST /v1/approvals/{approval_id}/decision
 * like an action's and under the same rules (shared/control/decide.ts `tallyDecision`): the key
 * needs `approvals:write`; the key that wrote the memory never decides it; solo mode waits 5 seconds;
 * a memory held in team or enterprise mode is decided by the writer's approval team too (found by
 * the actions' reviewer rule; anyone else finds nothing), enterprise mode needing its distinct
 * approvers under the rules in force when it was held. The decision and its audit entries go to
 * the writer's tenant. The approval that completes it runs the store path for the held input as a
 * write of its writer (quota, duplicates and auto-links as they stand now) and audits `memory.create`
 * under that key, then `memory.approved` naming the deciding key; a deny deletes the held input,
 * audited `memory.denied`; an approval that leaves enterprise mode short is `memory.approval_recorded`.
 */
export const holdDecisions: HoldDecider = {
  async decide(ctx, input) {
    requireScope(ctx.auth, APPROVALS_WRITE);
    const id = parseUrn(input.approvalId);
    const hold = id ? await holdFor(ctx.db, ctx.tenantId, id) : null;
    if (!id || !hold) throw approvalNotFound(input.approvalId);
    if (hold.keyId === ctx.auth.keyId) {
      throw forbidden('The key that wrote this memory cannot decide it: decide with another key of the account (a person, or the console)');
    }
    const writer = await writerOf(ctx, hold);
    // Checked and embedded before the transaction, as every store is: no lock waits on the provider.
    let prepared: Prepared[] = [];
    if (input.decision === 'approve') {
      ({ prepared } = await prepare(writer, [hold.input as unknown as StoreInput], true, { approved: { id, source: hold.source as unknown as Source } }));
    }
    return write(ctx, async (work) => {
      const locked = await holdFor(work.tx, ctx.tenantId, id, true);
      if (!locked) throw approvalNotFound(input.approvalId);
      const { role, status, approvers, required } = await tallyDecision(
        work,
        {
          id,
          tenantId: locked.tenantId,
          submittedAt: locked.createdAt,
          approvalMode: locked.approvalMode,
          approvalRules: locked.approvalRules,
          destructive: false,
        },
        { approvalId: input.approvalId, decision: input.decision, reason: input.reason, approverId: input.approverId },
        {
          earlier: async () => locked.decisions,
          record: (d) =>
            recordHoldDecision(work.tx, locked.tenantId, id, {
              approverTenantId: d.approverTenantId,
              approverKeyId: d.approverKeyId ?? null,
              approverId: d.approverId,
              approverRole: d.approverRole ?? null,
              decision: d.decision,
              reason: d.reason ?? null,
              createdAt: d.createdAt.toISOString(),
            }),
        },
      );
      let memoryId: string | null = null;
      if (status === 'approved') {
        const outcomes = await writeStores(work.actingAs(writer), prepared, { first: false, separateCommit: false });
        const outcome = outcomes.get(0);
        if (outcome && outcome.ok === false) throw outcome.error;
        memoryId = toUrn(id);
      }
      const final = status !== 'pending_review';
      if (final) await deleteHold(work.tx, locked.tenantId, id);
      const facts = {
        approval_id: toUrn(id),
        kind: 'memory',
        agent_id: locked.agentId,
        submitted_by_key_id: locked.keyId,
        decision: input.decision,
        reason: input.reason,
        approver_id: input.approverId,
        decided_by_key_id: ctx.auth.keyId,
        approver_tenant_id: ctx.tenantId,
        approver_role: role,
        approval_mode: locked.approvalMode,
        approvals: approvers,
        approvals_required: required,
        submitted_at: locked.createdAt.toISOString(),
        risk_score: locked.riskScore,
        status,
      };
      await work.audit({
        tenantId: locked.tenantId,
        operation: final ? `memory.${status}` : 'memory.approval_recorded',
        resourceType: 'memory',
        resourceId: id,
        metadata: facts,
      });
      return {
        approval_id: toUrn(id),
        kind: 'memory' as const,
        decision: input.decision,
        reason: input.reason,
        status,
        approver_id: input.approverId,
        decided_by_key_id: ctx.auth.keyId,
        approvals: approvers,
        approvals_required: required,
        decided_at: final ? ctx.now.toISOString() : null,
        memory_id: memoryId,
      };
    });
  },
};
