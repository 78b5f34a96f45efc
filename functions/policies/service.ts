import type { z } from '@hono/zod-openapi';
import { validInput } from '../../shared/platform/http/app';
import { BUILTIN_POLICIES, builtinListedName, isBuiltinName, MEMORY_INJECTION_POLICY } from '../../shared/control/builtins';
import { cannotDeleteBuiltin, invalidPolicy, policyNotFound } from '../../shared/control/errors';
import { EVALUATION_BUDGET } from '../../shared/control/budget';
import { evaluatePolicies } from '../../shared/control/evaluate';
import { forgetGovernance } from '../../shared/control/governance-copies';
import { loadMemoryPolicySet, loadPolicySet, policyPatterns } from '../../shared/control/policy-set';
import { trustOf } from '../../shared/memory/provenance';
import { validationError } from '../../shared/platform/contract/errors';
import { readControlSettings } from '../../shared/control/settings';
import { APPROVAL_MODES, CONNECTORS, type PolicyDefinition, type PolicyRule, type PolicyStepType, type PolicySubject } from '../../shared/control/types';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { newId } from '../../shared/platform/contract/ids';
import { requireFeature } from '../../shared/platform/contract/tiers';
import { write } from '../../shared/platform/data/unit-of-work';
import { policyRefusal } from './body';
import * as q from './queries';
import { PolicyBody, type PolicyInput, type ReplaceBody, type TestBody, scopeOf, toDetail, toSummary } from './schemas';

type Normalized = {
  name: string;
  description: string | null;
  stepTypes: PolicyStepType[];
  whitelistedDomains: string[];
  rules: PolicyRule[];
  enabled: boolean;
  agentId: string | null;
};

/** A validated body in stored form: step types lower-cased and unique, rules without unknown keys. */
function normalize(input: Omit<PolicyInput, 'name'> & { name: string }, at = ''): Normalized {
  if (isBuiltinName(input.name))
    throw invalidPolicy(`${input.name} is the name of a built-in policy`, [{ path: `${at}name`, message: 'is the name of a built-in policy' }]);
  const rules = input.rules.map((r) => {
    const rule: PolicyRule = { match: r.match, severity: r.severity };
    if (r.on_violation !== undefined) rule.on_violation = r.on_violation;
    if (r.reason !== undefined) rule.reason = r.reason;
    if (r.context_requires !== undefined) rule.context_requires = r.context_requires;
    if (r.confidence !== undefined) rule.confidence = r.confidence;
    return rule;
  });
  return {
    name: input.name,
    description: input.description ?? null,
    stepTypes: [...new Set((input.step_types ?? ['action']).map((t) => t.toLowerCase() as PolicyStepType))],
    whitelistedDomains: [...new Set((input.whitelisted_domains ?? []).map((d) => d.toLowerCase()))],
    rules,
    enabled: input.enabled ?? true,
    agentId: input.agent_id ?? null,
  };
}

const definitionFromDraft = (p: Normalized): PolicyDefinition => ({
  name: p.name,
  description: p.description,
  step_types: p.stepTypes,
  whitelisted_domains: p.whitelistedDomains,
  rules: p.rules,
  enabled: p.enabled,
  agent_id: p.agentId,
  source: 'custom',
  version: null,
});

function writeResult(row: q.PolicyRow, action: 'created' | 'updated' | 'disabled') {
  const where = row.agentId ? ` for agent ${row.agentId}` : '';
  return {
    policy_name: row.name,
    agent_id: row.agentId,
    scope: scopeOf(row.agentId),
    action,
    version: row.version,
    enabled: row.enabled,
    message: `Policy ${row.name}${where} ${action} (version ${row.version})`,
    policy: toDetail(row),
  };
}

/** Audit metadata names the policy, never its patterns or reasons. */
const auditMeta = (row: q.PolicyRow) => ({ name: row.name, agent_id: row.agentId, version: row.version, enabled: row.enabled, rule_count: row.rules.length });

/**
 * Create, upsert (POST) or replace (PUT) at one scope, under the tenant's policy lock. The tier's
 * limit is the verbs' (functions/policies/verbs.ts, `policyLimit`): counted under the same lock in
 * the unit of work this joins, whichever surface calls.
 */
async function save(ctx: TenantCtx, p: Normalized, mode: 'upsert' | 'replace' | 'insert') {
  if (p.agentId !== null) requireFeature(ctx.tier, 'agent_scoped_policies');
  const saved = await write(ctx, async (work) => {
    await work.lock(`policies:${ctx.tenantId}`);
    const existing = await q.policyAt(work.tx, ctx.tenantId, p.name, p.agentId);
    if (!existing && mode === 'replace') throw policyNotFound(p.name, p.agentId);
    if (existing && mode === 'insert') return null;
    // After the commit (of an import's chunk too), every instance's next store of the tenant reads
    // its policies before it embeds (docs/governed-memories.md#when-a-change-takes-effect).
    work.afterCommit(() => forgetGovernance(ctx.services, ctx.tenantId));
    const fields = {
      description: p.description,
      stepTypes: p.stepTypes,
      whitelistedDomains: p.whitelistedDomains,
      rules: p.rules as unknown as Record<string, unknown>[],
      enabled: p.enabled,
    };
    if (existing) {
      const row = await q.updatePolicy(work.tx, ctx.tenantId, existing.id, { ...fields, version: existing.version + 1, updatedAt: ctx.now });
      await work.audit({ operation: 'policy.updated', resourceType: 'policy', resourceId: row.id, metadata: auditMeta(row) });
      return { status: 200 as const, body: writeResult(row, 'updated'), id: row.id };
    }
    const row = await q.insertPolicy(work.tx, {
      id: newId('policy'),
      tenantId: ctx.tenantId,
      name: p.name,
      agentId: p.agentId,
      ...fields,
      version: 1,
      createdAt: ctx.now,
      updatedAt: ctx.now,
    });
    await work.audit({ operation: 'policy.created', resourceType: 'policy', resourceId: row.id, metadata: auditMeta(row) });
    return { status: 201 as const, body: writeResult(row, 'created'), id: row.id };
  });
  // The patterns were compiled to validate them: the tenant's next action finds them compiled.
  if (saved && p.enabled) policyPatterns(ctx.tenantId, ctx.tier).warm(p.rules.flatMap((r) => (r.context_requires ? [r.match, r.context_requires] : [r.match])));
  return saved;
}

/** The create body, checked here too: any caller gets the route's refusals (docs/portability.md#what-an-import-checks). */
const validPolicy = (input: z.input<typeof PolicyBody>): PolicyInput => validInput(PolicyBody, input, (e) => policyRefusal(e.issues));

/**
 * A create body's refusals that come before the limit (an invalid policy, an agent scope the tier
 * lacks), and the name, scope and enabled flag the limit reads.
 */
export function admitPolicy(ctx: TenantCtx, input: z.input<typeof PolicyBody>) {
  const p = normalize(validPolicy(input));
  if (p.agentId !== null) requireFeature(ctx.tier, 'agent_scoped_policies');
  return p;
}

export async function createPolicy(ctx: TenantCtx, input: z.input<typeof PolicyBody>) {
  const { status, body } = (await save(ctx, normalize(validPolicy(input)), 'upsert'))!;
  return { status, body };
}

/**
 * A policy of a bundle (`portability.import`): the create verb's rules, but a policy of that name
 * at that scope is kept as it is (null: nothing written).
 */
export async function restorePolicy(ctx: TenantCtx, input: z.input<typeof PolicyBody>): Promise<string | null> {
  const saved = await save(ctx, normalize(validPolicy(input)), 'insert');
  return saved?.id ?? null;
}

/**
 * A replacement's refusals that come before the limit, and what it saves: the name from the path,
 * the scope from the body, else the query (the route refuses the two differing).
 */
export function admitReplacement(ctx: TenantCtx, input: { policy_name: string } & z.infer<typeof ReplaceBody>) {
  const { policy_name: policyName, ...body } = input;
  if (isBuiltinName(policyName))
    throw invalidPolicy(`${policyName} is built in and cannot be changed`, [{ path: 'name', message: 'is the name of a built-in policy' }]);
  if (body.name !== undefined && body.name !== policyName)
    throw invalidPolicy(`name ${body.name} differs from the policy in the path (${policyName})`, [{ path: 'name', message: 'must be the name in the path' }]);
  const p = normalize({ ...body, name: policyName });
  if (p.agentId !== null) requireFeature(ctx.tier, 'agent_scoped_policies');
  return p;
}

export async function replacePolicy(ctx: TenantCtx, input: { policy_name: string } & z.infer<typeof ReplaceBody>) {
  return (await save(ctx, admitReplacement(ctx, input), 'replace'))!.body;
}

/** The route's two places for one scope must agree (PUT /v1/control/policies/{policy_name}?agent_id=). */
export function sameScope(queryAgentId: string | undefined, bodyAgentId: string | undefined) {
  if (queryAgentId !== undefined && bodyAgentId !== undefined && queryAgentId !== bodyAgentId)
    throw invalidPolicy('agent_id in the query and in the body differ', [{ path: 'agent_id', message: 'differs from the agent_id query parameter' }]);
  return bodyAgentId ?? queryAgentId;
}

/** Soft delete: enabled false and version + 1. Disabling a disabled policy changes nothing. */
export async function disablePolicy(ctx: TenantCtx, input: { name: string; agentId: string | null }) {
  if (builtinListedName(input.name)) throw cannotDeleteBuiltin(builtinListedName(input.name)!);
  return write(ctx, async (work) => {
    await work.lock(`policies:${ctx.tenantId}`);
    const existing = await q.policyAt(work.tx, ctx.tenantId, input.name, input.agentId);
    if (!existing) throw policyNotFound(input.name, input.agentId);
    if (!existing.enabled) return writeResult(existing, 'disabled');
    work.afterCommit(() => forgetGovernance(ctx.services, ctx.tenantId));
    const row = await q.updatePolicy(work.tx, ctx.tenantId, existing.id, { enabled: false, version: existing.version + 1, updatedAt: ctx.now });
    await work.audit({ operation: 'policy.disabled', resourceType: 'policy', resourceId: row.id, metadata: auditMeta(row) });
    return writeResult(row, 'disabled');
  });
}

/** The built-ins as listed; the memory one is enabled while the tenant's `memory_guard` is on. */
const builtinSummaries = (memoryGuard: boolean) =>
  [...BUILTIN_POLICIES, MEMORY_INJECTION_POLICY].map((p) => ({
    name: p.name.replace(/Policy$/, ''),
    enabled: p === MEMORY_INJECTION_POLICY ? memoryGuard : true,
    description: p.description,
    source: 'builtin' as const,
    agent_id: null,
  }));

export async function listPolicies(ctx: TenantCtx, query: { agent_id?: string }) {
  const [rows, settings] = await Promise.all([q.listPolicies(ctx.db, ctx.tenantId, query.agent_id ?? null), readControlSettings(ctx.db, ctx.tenantId)]);
  return {
    policies: [...builtinSummaries(settings.memory_guard), ...rows.map(toSummary)],
    mode: settings.evaluation_mode,
    approval_mode: settings.approval_mode,
    connectors: [...CONNECTORS],
    approval_modes: [...APPROVAL_MODES],
  };
}

export async function getPolicy(ctx: TenantCtx, input: { name: string; agentId: string | null }) {
  const listed = builtinListedName(input.name);
  if (listed) return builtinSummaries((await readControlSettings(ctx.db, ctx.tenantId)).memory_guard).find((b) => b.name === listed)!;
  const row = await q.policyAt(ctx.db, ctx.tenantId, input.name, input.agentId);
  if (!row) throw policyNotFound(input.name, input.agentId);
  return toDetail(row);
}

/**
 * The dry run: the tenant's current set for the agent (built-ins, enabled custom policies with the
 * agent override), plus the draft, which replaces a policy of the same name. Nothing is stored,
 * audited or counted as an action. A draft needs `draft_policies`; an agent-scoped draft also
 * `agent_scoped_policies`.
 */
export async function testPolicies(ctx: TenantCtx, input: z.infer<typeof TestBody>) {
  let draft: PolicyDefinition | null = null;
  if (input.policy) {
    requireFeature(ctx.tier, 'draft_policies');
    const normalized = normalize(input.policy, 'policy.');
    if (normalized.agentId !== null) requireFeature(ctx.tier, 'agent_scoped_policies');
    draft = definitionFromDraft(normalized);
  }
  const agentId = input.agent_id ?? null;
  if ((input.action === undefined) === (input.memory === undefined)) {
    throw validationError(
      input.action === undefined ? 'action' : 'memory',
      'send either action (an action to test) or memory (a memory write to test), not both',
    );
  }
  const memory = input.memory;
  let set = memory
    ? await loadMemoryPolicySet(ctx.db, ctx.tenantId, agentId, (await readControlSettings(ctx.db, ctx.tenantId)).memory_guard)
    : await loadPolicySet(ctx.db, ctx.tenantId, agentId);
  if (draft) set = [...set.filter((p) => p.source === 'builtin' || p.name !== draft!.name), draft];
  const subject: PolicySubject = memory
    ? {
        memory: {
          observation: memory.observation,
          tags: memory.tags,
          source: memory.source,
          trust: memory.trust ?? trustOf(memory.source.kind),
          agent_id: agentId,
        },
        agent_id: agentId,
      }
    : { action: input.action!, params: input.params ?? {}, agent_id: agentId };
  const { matches, budget_exceeded, ...result } = await evaluatePolicies(set, subject, EVALUATION_BUDGET, policyPatterns(ctx.tenantId, ctx.tier));
  return {
    status: result.status,
    policy_result: result,
    budget_exceeded,
    matches: matches.map((m) => ({
      policy: m.policy,
      rule_index: m.rule_index,
      severity: m.severity,
      on_violation: m.on_violation,
      match: m.match,
      field: m.field,
    })),
  };
}
