import type { z } from '@hono/zod-openapi';
import type { ApprovalRules } from '../../schema/actions';
import { recordDecision } from '../../shared/control/decide';
import { invalidDecision } from '../../shared/control/errors';
import { EVALUATION_BUDGET } from '../../shared/control/budget';
import { evaluatePolicies } from '../../shared/control/evaluate';
import { forgetGovernance } from '../../shared/control/governance-copies';
import { loadPolicySet, policyPatterns } from '../../shared/control/policy-set';
import { type ControlSettings, readControlSettings } from '../../shared/control/settings';
import { type ApprovalMode, CONNECTORS } from '../../shared/control/types';
import type { Ctx, TenantCtx } from '../../shared/platform/contract/context';
import { AppError, conflict, notFound } from '../../shared/platform/contract/errors';
import { newId, parseUrn } from '../../shared/platform/contract/ids';
import { heldMemoryStatus, holdDecider } from '../../shared/memory/holds';
import type { PageInput } from '../../shared/platform/data/pagination';
import { actingAgent, outsideAgent, requireScope, SETTINGS_WRITE } from '../../shared/platform/contract/scopes';
import { hasFeature, requireFeature, type Tier, tierRefusal } from '../../shared/platform/contract/tiers';
import { runtimeAgentTools } from '../../shared/runtime/tools';
import { isoOrNull } from '../../shared/platform/contract/time';
import { write } from '../../shared/platform/data/unit-of-work';
import { applyCapabilities } from './capabilities';
import * as q from './queries';
import { type DecisionBody, type DecisionQuery, ListPaging, type PolicyResultSchema, type ResultBody, type SettingsBody } from './schemas';

export interface Submission {
  action: string;
  params: Record<string, unknown>;
  agent_id: string | null;
}

type Connector = (typeof CONNECTORS)[number];

/** `github.create_issue` → connector `github` (null when the first segment is no known connector), operation `create_issue`. */
export function splitAction(action: string): { connector: Connector | null; operation: string } {
  const dot = action.indexOf('.');
  const first = action.slice(0, dot).toLowerCase();
  return { connector: (CONNECTORS as readonly string[]).includes(first) ? (first as Connector) : null, operation: action.slice(dot + 1) };
}

const MODE_FEATURE = { team: 'team_approvals', enterprise: 'enterprise_approvals' } as const;

/** Why the tier cannot decide actions in `mode` (a downgrade after the setting), or null when it can. */
export function modeUnavailable(mode: ApprovalMode, tier: Tier) {
  if (mode === 'solo') return null;
  const feature = MODE_FEATURE[mode];
  if (hasFeature(tier, feature)) return null;
  const { code, requiredTier: needed } = tierRefusal(feature);
  return {
    code,
    feature,
    required_tier: needed,
    current_tier: tier,
    message: `The approval mode is ${mode}, which needs the ${needed} tier or higher: an action that needs review is refused until you upgrade or set approval_mode to solo (PUT /v1/control/settings)`,
  };
}

/**
 * The approval mode a held action is decided under: the tenant's setting. A tier that no longer has
 * that mode's feature (a downgrade after the setting) is refused like any missing control-plane
 * feature, 403 svc_ram.v1.tier.feature_required, rather than quietly decided in another mode.
 */
export function approvalModeFor(mode: ApprovalMode, tier: Tier): ApprovalMode {
  const refused = modeUnavailable(mode, tier);
  if (!refused) return mode;
  const { code, message, ...details } = refused;
  throw new AppError(code, message, details);
}

function submittedDto(row: q.ActionRow) {
  return {
    action_id: row.id,
    action: row.action,
    connector: row.connector as Connector | null,
    operation: row.operation,
    agent_id: row.agentId,
    status: row.status as 'allowed' | 'pending_review' | 'blocked',
    policy_result: row.policyResult as unknown as z.infer<typeof PolicyResultSchema>,
    message: messageOf(row),
    submitted_at: row.submittedAt.toISOString(),
  };
}

function messageOf(row: q.ActionRow): string {
  const pr = row.policyResult as { triggered_policy?: string; reason?: string; warnings?: string[]; shadow_status?: string };
  const by = `${pr.triggered_policy ?? 'a policy'}${pr.reason ? `: ${pr.reason}` : ''}`;
  if (row.evaluationMode === 'shadow' && row.outcome !== 'allowed') return `Allowed (shadow mode): enforcement would have answered ${row.outcome}, by ${by}.`;
  if (row.status === 'blocked') return `Blocked by ${by}`;
  if (row.status === 'pending_review') return `Held for review by ${by}. Poll GET /v1/actions/${row.id} for the decision.`;
  const warnings = pr.warnings?.length ?? 0;
  return warnings ? `Allowed with ${warnings} warning${warnings === 1 ? '' : 's'}.` : 'Allowed: no policy objected.';
}

export function statusDto(row: q.ActionRow) {
  return {
    action_id: row.id,
    action: row.action,
    connector: row.connector as Connector | null,
    operation: row.operation,
    agent_id: row.agentId,
    status: row.status,
    reason: row.reason,
    decided_at: isoOrNull(row.decidedAt),
    submitted_at: row.submittedAt.toISOString(),
    risk_score: row.riskScore,
    approval_mode: row.approvalMode,
    ...(row.resultAt ? { result_detail: row.resultDetail } : {}),
  };
}

/**
 * The tenant's actions, newest first, each as GET /v1/actions/{action_id} shows it with the
 * evaluation's `outcome`; a key confined to an agent sees only that agent's, as by id.
 */
export async function listActions(ctx: TenantCtx, page: PageInput) {
  const agentId = ctx.auth.restriction?.agentId ?? null;
  const { page: found, total } = await q.recentActions(ctx.db, ctx.tenantId, page, agentId);
  return { actions: found.map((row) => ({ ...statusDto(row), outcome: row.outcome })), ...ListPaging.meta(total, page, found.length) };
}

/**
 * Evaluates an action against the policies that apply to its agent and records it, with its audit
 * entry, in one transaction: `action.allowed`, `action.blocked` or `action.pending_review`
 * (resource id = the action id). A pending action also emits `action.pending_review` and is decided
 * under the approval settings in force now. In shadow mode the outcome is recorded, never enforced.
 */
export async function submit(ctx: TenantCtx, submission: Submission) {
  // A key confined to an agent submits as that agent, under that agent's policies.
  const input = { ...submission, agent_id: actingAgent(ctx.auth, submission.agent_id ?? undefined, 'submits actions') ?? null };
  const [settings, policies, agent] = await Promise.all([
    readControlSettings(ctx.db, ctx.tenantId),
    loadPolicySet(ctx.db, ctx.tenantId, input.agent_id),
    input.agent_id ? runtimeAgentTools(ctx.db, ctx.tenantId, input.agent_id) : null,
  ]);
  const { connector, operation } = splitAction(input.action);
  const {
    matches: _matches,
    budget_exceeded: _budget,
    ...policyOutcome
  } = await evaluatePolicies(policies, input, EVALUATION_BUDGET, policyPatterns(ctx.tenantId, ctx.tier));
  const evaluated = applyCapabilities(policyOutcome, agent, input.action, connector);
  const outcome = evaluated.status;
  const shadow = settings.evaluation_mode === 'shadow';
  const status = shadow ? 'allowed' : outcome;
  const id = newId('action');
  const pending = status === 'pending_review';
  const mode = pending ? approvalModeFor(settings.approval_mode, ctx.tier) : null;
  const rules: ApprovalRules | null = mode
    ? { min_approvals: mode === 'enterprise' ? settings.min_approvals : 1, require_manager: settings.require_manager, allowed_roles: settings.allowed_roles }
    : null;
  const policyResult = {
    ...evaluated,
    evaluation_mode: settings.evaluation_mode,
    ...(shadow ? { status: 'allowed' as const, shadow_status: outcome } : {}),
    ...(pending ? { action_id: id } : {}),
  };
  const violations = evaluated.violations?.length ?? 0;
  return write(ctx, async (work) => {
    const audit = await work.audit({
      operation: `action.${status}`,
      resourceType: 'action',
      resourceId: id,
      metadata: {
        action: input.action,
        connector,
        agent_id: input.agent_id,
        status,
        outcome,
        evaluation_mode: settings.evaluation_mode,
        risk_score: evaluated.risk_score,
        triggered_policy: evaluated.triggered_policy ?? null,
        reason: evaluated.reason ?? null,
        violations,
        approval_mode: mode,
      },
    });
    const row = await q.insertAction(work.tx, {
      id,
      tenantId: ctx.tenantId,
      agentId: input.agent_id,
      action: input.action,
      connector,
      operation,
      params: input.params,
      status,
      outcome,
      evaluationMode: settings.evaluation_mode,
      approvalMode: mode,
      approvalRules: rules,
      policyResult: policyResult as unknown as Record<string, unknown>,
      riskScore: evaluated.risk_score,
      violationCount: violations,
      reviewable: pending,
      submittedAt: ctx.now,
      submittedBy: ctx.auth.keyId,
      decidedAt: null,
      reason: status === 'allowed' ? null : (evaluated.reason ?? null),
      resultDetail: null,
      resultAt: null,
      lastSeq: audit.seq,
    });
    if (pending) {
      await work.event('action.pending_review', {
        action_id: id,
        action: input.action,
        connector,
        agent_id: input.agent_id,
        risk_score: evaluated.risk_score,
        triggered_policy: evaluated.triggered_policy ?? null,
        reason: evaluated.reason ?? null,
        approval_mode: mode,
        submitted_at: ctx.now.toISOString(),
      });
    }
    return submittedDto(row);
  });
}

/** A key confined to an agent sees only that agent's actions: another's answers as an unknown id. */
const visible = (ctx: TenantCtx, row: q.ActionRow | null): row is q.ActionRow => !!row && !outsideAgent(ctx.auth, row.agentId);

export async function getAction(ctx: TenantCtx, input: { actionId: string }) {
  // A memory id names a memory write a rule held (docs/governed-memories.md): its status is polled here too.
  const memoryId = parseUrn(input.actionId);
  if (memoryId) {
    const held = await heldMemoryStatus(ctx.db, ctx.tenantId, memoryId);
    if (!held || outsideAgent(ctx.auth, held.agent_id)) throw notFound('Action');
    return held;
  }
  const row = await q.actionOf(ctx.db, ctx.tenantId, input.actionId);
  if (!visible(ctx, row)) throw notFound('Action');
  return statusDto(row);
}

export async function reportResult(ctx: TenantCtx, input: { actionId: string } & z.infer<typeof ResultBody>) {
  return write(ctx, async (work) => {
    const row = await q.actionOf(work.tx, ctx.tenantId, input.actionId, true);
    if (!visible(ctx, row)) throw notFound('Action');
    if (row.status !== 'allowed' && row.status !== 'approved') {
      throw conflict(`The action is ${row.status}; only an allowed or approved action reports a result, once`, { action_status: row.status });
    }
    const audit = await work.audit({
      operation: `action.${input.status}`,
      resourceType: 'action',
      resourceId: row.id,
      metadata: { action: row.action, agent_id: row.agentId, previous_status: row.status, detail: input.detail ?? null },
    });
    const updated = await q.updateAction(work.tx, ctx.tenantId, row.id, {
      status: input.status,
      resultDetail: input.detail ?? null,
      resultAt: ctx.now,
      lastSeq: audit.seq,
    });
    return statusDto(updated);
  });
}

type DecisionInput = z.infer<typeof DecisionBody>;
type DecisionQueryInput = z.infer<typeof DecisionQuery>;

const defined = <T extends object>(o: T | undefined): Partial<T> =>
  Object.fromEntries(Object.entries(o ?? {}).filter(([, v]) => v !== undefined)) as Partial<T>;

/**
 * Records a decision on a pending action under the mode it was submitted in (see the route's
 * description for the rules), with the action row locked so concurrent decisions go one at a time
 * and only the first can decide. Body fields win over query parameters. The decision goes into the
 * submitter's audit chain (resource id = the action id); a final one emits `action.decided`.
 */
export async function decide(ctx: TenantCtx, input: { approvalId: string; body?: DecisionInput; query?: DecisionQueryInput }) {
  const fields = { ...defined(input.query), ...defined(input.body) };
  const raw = fields.decision === undefined ? 'approve' : fields.decision;
  const normalized = typeof raw === 'string' ? raw.trim().toLowerCase() : null;
  if (normalized !== 'approve' && normalized !== 'deny') throw invalidDecision(raw);
  const decision: 'approve' | 'deny' = normalized;
  const approverId = fields.approver_id ?? ctx.auth.email;
  const reason = fields.reason ?? null;

  // A memory id names a held memory (docs/governed-memories.md): the memories family decides it.
  if (parseUrn(input.approvalId)) return holdDecider().decide(ctx, { approvalId: input.approvalId, decision, reason, approverId });
  return write(ctx, (work) => recordDecision(work, { approvalId: input.approvalId, decision, reason, approverId, confirmation: fields.confirmation }));
}

/**
 * Denies one action still pending since before `before` with reason `expired` (maintenance),
 * checked again under its lock: a decision that came first wins.
 */
export async function expirePending(ctx: Ctx, target: { id: string; tenantId: string }, before: Date): Promise<boolean> {
  return write(ctx, async (work) => {
    const row = await q.actionOf(work.tx, target.tenantId, target.id, true);
    if (row?.status !== 'pending_review' || row.submittedAt >= before) return false;
    const facts = {
      action_id: row.id,
      action: row.action,
      agent_id: row.agentId,
      decision: 'deny',
      reason: 'expired',
      approval_mode: row.approvalMode,
      status: 'denied',
    };
    const audit = await work.audit({ tenantId: row.tenantId, operation: 'action.denied', resourceType: 'action', resourceId: row.id, metadata: facts });
    await q.updateAction(work.tx, row.tenantId, row.id, { status: 'denied', decidedAt: ctx.now, reason: 'expired', lastSeq: audit.seq });
    await work.event('action.decided', { ...facts, decided_at: ctx.now.toISOString() }, { tenantId: row.tenantId });
    return true;
  });
}

function settingsDto(s: ControlSettings, tier: Tier, updatedAt: Date | null) {
  // After a downgrade the chosen mode stays in force (actions needing review are refused, never
  // decided in solo behind the tenant's back), so the settings say so rather than report solo.
  return {
    ...s,
    allowed_roles: s.allowed_roles as ('owner' | 'admin' | 'member')[],
    effective_approval_mode: s.approval_mode,
    approval_mode_unavailable: modeUnavailable(s.approval_mode, tier),
    updated_at: isoOrNull(updatedAt),
  };
}

export async function getSettings(ctx: TenantCtx) {
  const [settings, row] = await Promise.all([readControlSettings(ctx.db, ctx.tenantId), q.settingsRow(ctx.db, ctx.tenantId)]);
  return settingsDto(settings, ctx.tier, row?.updatedAt ?? null);
}

export async function putSettings(ctx: TenantCtx, input: z.infer<typeof SettingsBody>) {
  // Shadow evaluation turns enforcement off for the account: never a power of an agent's actions:write.
  requireScope(ctx.auth, SETTINGS_WRITE);
  if (input.approval_mode === 'team') requireFeature(ctx.tier, 'team_approvals');
  if (input.approval_mode === 'enterprise') requireFeature(ctx.tier, 'enterprise_approvals');
  return write(ctx, async (work) => {
    await work.lock(`control-settings:${ctx.tenantId}`);
    // After the commit, every instance's next store of the tenant reads its settings before it
    // embeds (docs/governed-memories.md#when-a-change-takes-effect).
    work.afterCommit(() => forgetGovernance(ctx.services, ctx.tenantId));
    const before = await readControlSettings(work.tx, ctx.tenantId);
    const next: ControlSettings = { ...before, ...defined(input) };
    await q.saveSettings(work.tx, ctx.tenantId, next, ctx.now);
    await work.audit({
      operation: 'control.settings_updated',
      resourceType: 'control_settings',
      resourceId: ctx.tenantId,
      metadata: { changes: defined(input), settings: next },
    });
    return settingsDto(next, ctx.tier, ctx.now);
  });
}
