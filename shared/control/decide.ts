import type { TenantCtx } from '../platform/contract/context';
import { conflict, forbidden, validationError } from '../platform/contract/errors';
import { newId } from '../platform/contract/ids';
import { APPROVALS_WRITE, requireScope } from '../platform/contract/scopes';
import { MINUTE } from '../platform/contract/time';
import type { Work } from '../platform/data/unit-of-work';
import { approvalFor, type DecisionRow, decisionsOf, insertDecision, type NewDecision, reviewerRoles, type TeamRole, updateAction } from './approvals';
import { approvalAlreadyDecided, approvalNotFound } from './errors';

/** Solo mode: no decision before this long after submission. */
export const SOLO_DELAY_MS = 5_000;
/** Team mode: the submitter approves its own action only after this long. */
export const TEAM_SELF_APPROVAL_MS = 10 * MINUTE;
/** Words that make an action destructive (its name or params): approving one in solo mode needs the phrase. */
const DESTRUCTIVE = /delete|drop|destroy|truncate|rollback|transfer|payment/i;
export const CONFIRMATION_PHRASE = 'ROLLBACK';
const MANAGER_ROLES: readonly string[] = ['owner', 'admin'];
const ROLE_RANK = ['owner', 'admin', 'member', 'readonly'] as const;

/** A decision asked for too soon: the message names the wait in seconds, as `retry_after` gives it. */
export const tooEarly = (waitMs: number, message: string) => {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  return conflict(`${message}; retry after ${seconds} ${seconds === 1 ? 'second' : 'seconds'}`, { retry_after: seconds });
};

const bestRole = (roles: TeamRole[]): TeamRole | null => ROLE_RANK.find((r) => roles.includes(r)) ?? null;

export function isDestructive(row: { action: string; params: unknown }): boolean {
  return destructiveWord(row) !== null;
}

/** The word that makes an action destructive and where it is (the console names it beside the confirmation field); null when none does. */
export function destructiveWord(row: { action: string; params: unknown }): { word: string; in: 'name' | 'params' } | null {
  const named = DESTRUCTIVE.exec(row.action);
  if (named) return { word: named[0], in: 'name' };
  const inParams = DESTRUCTIVE.exec(JSON.stringify(row.params));
  return inParams ? { word: inParams[0], in: 'params' } : null;
}

export interface DecisionRequest {
  approvalId: string;
  decision: 'approve' | 'deny';
  reason: string | null;
  /** Who decided, as recorded (free-form; the deciding key's e-mail by default). */
  approverId: string;
  /** `ROLLBACK` approves a destructive action in solo mode. */
  confirmation?: string;
}

/** What a decision is taken on: a held action, or a held memory (docs/governed-memories.md). */
export interface Decidable {
  id: string;
  /** The submitter's tenant: the decision is recorded there. */
  tenantId: string;
  submittedAt: Date;
  approvalMode: 'solo' | 'team' | 'enterprise';
  approvalRules: { min_approvals: number; require_manager: boolean; allowed_roles: string[] } | null;
  /** Approving it in solo mode needs the confirmation phrase. */
  destructive: boolean;
}

/** Where the decisions on a subject are kept: an action's in action_decisions, a held memory's on its row. */
export interface DecisionLedger {
  earlier(): Promise<Pick<DecisionRow, 'approverTenantId' | 'approverRole' | 'decision'>[]>;
  record(decision: NewDecision): Promise<void>;
}

const actionLedger = (work: Work<TenantCtx>, subject: Decidable): DecisionLedger => ({
  earlier: () => decisionsOf(work.tx, subject.tenantId, subject.id),
  record: (decision) => insertDecision(work.tx, decision),
});

/**
 * The rules of the approval modes, once for actions and held memories: who may decide `subject`
 * (the deciding tenant's role in the submitter's approval teams), when, and how far its approval
 * stands after this decision (distinct approving tenants against what enterprise mode requires).
 * Records the decision in the submitter's tenant. The caller has found the subject under its lock
 * with the reviewer rule (approvals.ts) and refused the key that submitted it.
 */
export async function tallyDecision(work: Work<TenantCtx>, subject: Decidable, input: DecisionRequest, ledger: DecisionLedger = actionLedger(work, subject)) {
  const { ctx } = work;
  const { decision, reason, approverId } = input;
  const own = subject.tenantId === ctx.tenantId;
  const elapsed = ctx.now.getTime() - subject.submittedAt.getTime();
  const mode = subject.approvalMode;
  const rules = subject.approvalRules ?? { min_approvals: 1, require_manager: false, allowed_roles: [] };
  let role: TeamRole | null = null;

  if (mode === 'solo') {
    if (elapsed < SOLO_DELAY_MS) throw tooEarly(SOLO_DELAY_MS - elapsed, 'Solo mode: a decision is taken 5 seconds after submission at the earliest');
    if (decision === 'approve' && subject.destructive && input.confirmation !== CONFIRMATION_PHRASE) {
      throw validationError('confirmation', `approving a destructive action in solo mode needs confirmation: "${CONFIRMATION_PHRASE}"`);
    }
  } else {
    role = bestRole(await reviewerRoles(work.tx, subject.tenantId, ctx.tenantId));
    if (!own && (role === null || role === 'readonly')) throw forbidden('A readonly team member may not decide approvals');
    if (mode === 'team' && own && decision === 'approve' && elapsed < TEAM_SELF_APPROVAL_MS) {
      throw tooEarly(
        TEAM_SELF_APPROVAL_MS - elapsed,
        'Team mode: another team member approves at once; the submitter may approve its own action 10 minutes after submission at the earliest',
      );
    }
    if (mode === 'enterprise' && rules.allowed_roles.length && !(role && rules.allowed_roles.includes(role))) {
      throw forbidden(`Enterprise mode: only ${rules.allowed_roles.join(', ')} of a team shared with the submitter may decide (your role: ${role ?? 'none'})`);
    }
  }

  const earlier = mode === 'enterprise' ? await ledger.earlier() : [];
  if (earlier.some((d) => d.approverTenantId === ctx.tenantId && d.decision === 'approve') && decision === 'approve') {
    throw conflict('Your approval is already recorded; it needs approvals from other team members', { approval_status: 'pending_review' });
  }
  await ledger.record({
    id: newId('decision'),
    tenantId: subject.tenantId,
    actionId: subject.id,
    approverTenantId: ctx.tenantId,
    approverKeyId: ctx.auth.keyId,
    approverId,
    approverRole: role,
    decision,
    reason,
    createdAt: ctx.now,
  });

  const approvals = [...earlier, { approverTenantId: ctx.tenantId, approverRole: role, decision }].filter((d) => d.decision === 'approve');
  const approvers = new Set(approvals.map((d) => d.approverTenantId)).size;
  const required = mode === 'enterprise' ? rules.min_approvals : 1;
  // The submitter never counts as its own manager, whatever teams it owns.
  const managerOk =
    mode !== 'enterprise' ||
    !rules.require_manager ||
    approvals.some((d) => d.approverTenantId !== subject.tenantId && d.approverRole && MANAGER_ROLES.includes(d.approverRole));
  const status: 'approved' | 'denied' | 'pending_review' = decision === 'deny' ? 'denied' : approvers >= required && managerOk ? 'approved' : 'pending_review';
  return { role, mode, status, approvers, required };
}

/**
 * Records a decision on a pending action under the mode it was submitted in, inside `work` (the
 * approvals route and runtime interventions both decide through here), with the action row locked
 * so concurrent decisions go one at a time and only the first can decide. The decision goes into
 * the submitter's audit chain (resource id = the action id), naming the deciding key
 * (`decided_by_key_id`); a final one emits `action.decided`.
 *
 * Who may decide is checked here, not in a route, so every way in obeys it: the key needs
 * `approvals:write` (an agent's `actions:write` submits, never decides), and the key that submitted
 * the action never decides it, in any mode and for each of the k decisions of enterprise mode, so an
 * agent cannot approve what it asked for, whatever `approver_id` it writes.
 */
export async function recordDecision(work: Work<TenantCtx>, input: DecisionRequest) {
  const { ctx } = work;
  const { decision, reason, approverId } = input;
  requireScope(ctx.auth, APPROVALS_WRITE);
  const row = await approvalFor(work.tx, ctx.tenantId, input.approvalId);
  if (!row) throw approvalNotFound(input.approvalId);
  if (row.submittedBy === ctx.auth.keyId) {
    throw forbidden('The key that submitted this action cannot decide it: decide with another key of the account (a person, or the console)');
  }
  if (row.status !== 'pending_review') throw approvalAlreadyDecided(row.id, row.status);
  const { role, mode, status, approvers, required } = await tallyDecision(
    work,
    {
      id: row.id,
      tenantId: row.tenantId,
      submittedAt: row.submittedAt,
      approvalMode: row.approvalMode ?? 'solo',
      approvalRules: row.approvalRules ?? null,
      destructive: isDestructive(row),
    },
    input,
  );
  const final = status !== 'pending_review';

  const facts = {
    action_id: row.id,
    action: row.action,
    agent_id: row.agentId,
    decision,
    reason,
    approver_id: approverId,
    decided_by_key_id: ctx.auth.keyId,
    approver_tenant_id: ctx.tenantId,
    approver_role: role,
    approval_mode: mode,
    approvals: approvers,
    approvals_required: required,
    status,
  };
  const audit = await work.audit({
    tenantId: row.tenantId,
    operation: final ? `action.${status}` : 'action.approval_recorded',
    resourceType: 'action',
    resourceId: row.id,
    metadata: facts,
  });
  await updateAction(work.tx, row.tenantId, row.id, final ? { status, decidedAt: ctx.now, reason, lastSeq: audit.seq } : { lastSeq: audit.seq });
  if (final) await work.event('action.decided', { ...facts, decided_at: ctx.now.toISOString() }, { tenantId: row.tenantId });
  return {
    approval_id: row.id,
    decision,
    reason,
    status,
    approver_id: approverId,
    decided_by_key_id: ctx.auth.keyId,
    approvals: approvers,
    approvals_required: required,
    decided_at: final ? ctx.now.toISOString() : null,
  };
}
