import { EVALUATION_BUDGET } from '../../../shared/control/budget';
import { evaluatePolicies } from '../../../shared/control/evaluate';
import { policyPatterns, resolvePolicySet } from '../../../shared/control/policy-set';
import { MEMORY_INJECTION_POLICY } from '../../../shared/control/builtins';
import type { PolicyDefinition, PolicyResult } from '../../../shared/control/types';
import type { ApprovalRules } from '../../../schema/actions';
import { heldMemoryLimit, insertHold } from '../../../shared/memory/holds';
import { type Source, trustOf } from '../../../shared/memory/provenance';
import type { TenantCtx } from '../../../shared/platform/contract/context';
import { AppError } from '../../../shared/platform/contract/errors';
import { toUrn } from '../../../shared/platform/contract/ids';
import { enforceLimit } from '../../../shared/platform/http/verb';
import { write } from '../../../shared/platform/data/unit-of-work';
import { dropGovernance } from '../../../shared/control/governance-copies';
import { governanceFor } from './governance-cache';
import type { Prepared, StoreOutcome } from './prepare';

/**
 * Governed memory writes (docs/governed-memories.md): every store (single, batch, import line) is
 * evaluated by the policies of step type `memory` after its target is checked and before it is
 * embedded. `block` refuses it (403 BLOCKED with the policy result, as a blocked action), a rule that
 * requires approval holds it (stored in `memory_holds`, answered 202 `pending_review`), `warn` stores
 * it with the warnings in the answer. In shadow mode nothing is enforced.
 */

export type PolicyOutcome = Omit<PolicyResult, 'action_id'> & { evaluation_mode: string };

/** A memory a rule holds: what the answer and the hold row need. */
export interface Held {
  item: Prepared;
  id: string;
  policyResult: PolicyOutcome;
  approvalMode: 'solo' | 'team' | 'enterprise';
  approvalRules: ApprovalRules;
}

/** The answer for a held memory (202). */
export function heldAnswer(h: { id: string; policyResult: PolicyOutcome }) {
  const by = `${h.policyResult.triggered_policy ?? 'a policy'}${h.policyResult.reason ? `: ${h.policyResult.reason}` : ''}`;
  return {
    status: 'pending_review' as const,
    approval_id: toUrn(h.id),
    memory_id: toUrn(h.id),
    policy_result: h.policyResult,
    message: `Held for review by ${by}. It is not searchable until approved; poll GET /v1/actions/${toUrn(h.id)} (MCP: action_status) for the decision.`,
  };
}
export type HeldAnswer = ReturnType<typeof heldAnswer>;

const appliesToMemory = (p: PolicyDefinition) => p.enabled && p.step_types.some((t) => t.toLowerCase() === 'memory');

/** A refusal of a blocked memory write: the contract's BLOCKED, with the policy result. */
export const blocked = (result: PolicyOutcome) =>
  new AppError('BLOCKED', `Blocked by ${result.triggered_policy ?? 'a policy'}${result.reason ? `: ${result.reason}` : ''}`, {
    policy_result: result,
  });

/**
 * Evaluates the prepared stores: answers those to store now (with their policy warnings), records
 * blocked ones in `outcomes` (or throws with `throwFailure`), and returns the held ones. Each store
 * to write carries the governance version it was judged with (`judgedWith`), which its transaction
 * checks (writeStores). `fresh`: judge with governance read now, not the kept copy.
 */
export async function govern(
  ctx: TenantCtx,
  prepared: Prepared[],
  outcomes: StoreOutcome[],
  throwFailure: boolean,
  fresh = false,
): Promise<{ store: Prepared[]; held: Held[]; warnings: Map<number, string[]> }> {
  const warnings = new Map<number, string[]>();
  if (!prepared.length) return { store: prepared, held: [], warnings };
  const judge = memoryJudge(ctx, { fresh });
  const store: Prepared[] = [];
  const held: Held[] = [];
  for (const item of prepared) {
    const { source, input } = item;
    const verdict = await judge({ observation: input.observation, tags: input.tags, source, agentId: input.agent_id ?? null });
    if (verdict?.policyResult.warnings.length) warnings.set(item.index, verdict.policyResult.warnings);
    if (!verdict || verdict.enforced === 'allowed') store.push(Object.assign(item, { judgedWith: judge.version() }));
    else if (verdict.enforced === 'blocked') {
      if (throwFailure) throw blocked(verdict.policyResult);
      outcomes[item.index] = { ok: false, error: blocked(verdict.policyResult) };
    } else held.push({ item, id: '', policyResult: verdict.policyResult, approvalMode: verdict.approvalMode, approvalRules: verdict.approvalRules });
  }
  return { store, held, warnings };
}

/**
 * A store's transaction read a governance version other than the one some of its stores were judged
 * with (writeStores): it wrote nothing; judgeAgain decides them anew.
 */
export class GovernanceChanged extends Error {
  constructor() {
    super('the memory policies changed after the stores were judged');
  }
}

/**
 * After GovernanceChanged: judges `prepared` again with governance read now (already embedded, they
 * may now be blocked or held), writes those held (writeHolds) and sets the outcomes of those that no
 * longer store; returns those to write, with their new warnings and version.
 */
export async function judgeAgain(
  ctx: TenantCtx,
  prepared: Prepared[],
  outcomes: Map<number, StoreOutcome>,
  newId: () => string,
  throwFailure: boolean,
): Promise<Prepared[]> {
  dropGovernance(ctx.services, ctx.tenantId);
  const decided: StoreOutcome[] = [];
  const { store, held, warnings } = await govern(ctx, prepared, decided, throwFailure, true);
  await writeHolds(ctx, held, decided, newId, throwFailure);
  decided.forEach((o, index) => {
    outcomes.set(index, o);
  });
  for (const p of store) p.warnings = warnings.get(p.index);
  return store;
}

/** What the memory policies make of one write: null when no policy of step type `memory` applies. */
export interface Verdict {
  /** What is enforced: the policy result's status, or `allowed` in shadow mode. */
  enforced: 'allowed' | 'blocked' | 'pending_review';
  policyResult: PolicyOutcome;
  approvalMode: 'solo' | 'team' | 'enterprise';
  /** The rules an approval follows, as an action held now would (min_approvals counts in enterprise mode only). */
  approvalRules: ApprovalRules;
}

/**
 * The tenant's memory policies as one function of a write (its text, tags, source and agent), the
 * settings and the policies read once, in one statement, for however many writes it judges; each
 * agent's set (loadMemoryPolicySet's: MemoryInjection first while memory_guard is on) resolved once.
 * Unless `fresh`, it judges with the process's kept copy (governance-cache.ts) when there is one:
 * what lets a write through is checked again in its transaction, against the version (`version()`,
 * that of the last verdict), but a block or a hold is never decided from the copy: the policies are
 * read then, and that verdict stands.
 */
export function memoryJudge(ctx: TenantCtx, opts: { fresh?: boolean } = { fresh: true }) {
  let governance = governanceFor(ctx, opts.fresh ?? true);
  let version = 0;
  const sets = new Map<string | null, PolicyDefinition[]>();
  const verdictOf = async (w: Written): Promise<Verdict | null> => {
    const { settings, policies: rows, version: read } = await governance;
    version = read;
    const { memory_guard, evaluation_mode, approval_mode, min_approvals, require_manager, allowed_roles } = settings;
    let policies = sets.get(w.agentId);
    if (!policies) {
      const set = resolvePolicySet(rows, w.agentId);
      sets.set(w.agentId, (policies = memory_guard ? [MEMORY_INJECTION_POLICY, ...set] : set));
    }
    // Most accounts have no memory policy: nothing to evaluate.
    if (!policies.some(appliesToMemory)) return null;
    const {
      matches: _m,
      budget_exceeded: _b,
      ...result
    } = await evaluatePolicies(
      policies,
      {
        memory: {
          observation: w.observation,
          tags: w.tags,
          source: { kind: w.source.kind, via: w.source.via, ref: w.source.ref },
          trust: trustOf(w.source.kind),
          agent_id: w.agentId,
        },
        agent_id: w.agentId,
      },
      EVALUATION_BUDGET,
      policyPatterns(ctx.tenantId, ctx.tier),
    );
    const policyResult: PolicyOutcome = { ...result, evaluation_mode };
    const approvalRules = { min_approvals: approval_mode === 'enterprise' ? min_approvals : 1, require_manager, allowed_roles };
    return { enforced: evaluation_mode === 'shadow' ? 'allowed' : result.status, policyResult, approvalMode: approval_mode, approvalRules };
  };
  const judge = async (w: Written): Promise<Verdict | null> => {
    const verdict = await verdictOf(w);
    if (!verdict || verdict.enforced === 'allowed' || !(await governance).cached) return verdict;
    governance = governanceFor(ctx, true);
    sets.clear();
    return verdictOf(w);
  };
  return Object.assign(judge, { version: () => version });
}

/** A write as the memory policies see it. */
type Written = { observation: string; tags: string[]; source: Pick<Source, 'kind' | 'via' | 'ref'>; agentId: string | null };

/**
 * Writes the held memories in one unit of work, under the tenant's cap on pending holds, each with
 * its audit entry `memory.held`; sets each one's outcome (held, or the cap's refusal).
 */
export async function writeHolds(ctx: TenantCtx, held: Held[], outcomes: StoreOutcome[], newId: () => string, throwFailure: boolean) {
  if (!held.length) return;
  await write(ctx, async (work) => {
    for (const h of held) {
      try {
        await enforceLimit(heldMemoryLimit, work, null);
      } catch (err) {
        if (!(err instanceof AppError) || throwFailure) throw err;
        outcomes[h.item.index] = { ok: false, error: err };
        continue;
      }
      h.id ||= newId();
      const { item } = h;
      const restriction = ctx.auth.restriction
        ? {
            scopes: [...ctx.auth.restriction.scopes],
            agentId: ctx.auth.restriction.agentId,
            spaceIds: ctx.auth.restriction.spaceIds ? [...ctx.auth.restriction.spaceIds] : null,
          }
        : null;
      await insertHold(work.tx, {
        id: h.id,
        tenantId: ctx.tenantId,
        keyId: ctx.auth.keyId,
        restriction,
        agentId: item.input.agent_id ?? null,
        input: item.input as unknown as Record<string, unknown>,
        source: item.source as unknown as Record<string, unknown>,
        trust: trustOf(item.source.kind),
        policyResult: h.policyResult as unknown as Record<string, unknown>,
        riskScore: h.policyResult.risk_score,
        approvalMode: h.approvalMode,
        approvalRules: h.approvalRules,
        createdAt: ctx.now,
      });
      await work.audit({
        operation: 'memory.held',
        resourceType: 'memory',
        resourceId: h.id,
        metadata: {
          approval_id: toUrn(h.id),
          agent_id: item.input.agent_id ?? null,
          source_kind: item.source.kind,
          trust: trustOf(item.source.kind),
          triggered_policy: h.policyResult.triggered_policy ?? null,
          reason: h.policyResult.reason ?? null,
          risk_score: h.policyResult.risk_score,
        },
      });
      outcomes[item.index] = { ok: 'held', held: heldAnswer(h) };
    }
  });
}
