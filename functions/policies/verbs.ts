import type { TenantCtx } from '../../shared/platform/contract/context';
import type { Tx } from '../../shared/platform/data/db';
import { tiers } from '../../shared/platform/contract/tiers';
import { defineVerb, type VerbLimit } from '../../shared/platform/http/verb';
import { policyValidationHook } from './body';
import * as q from './queries';
import * as s from './schemas';
import { admitPolicy, admitReplacement, createPolicy, listPolicies, replacePolicy, restorePolicy, testPolicies } from './service';

/** The policies verbs the routes and the console share (docs/architecture.md#verbs). */
export const listPoliciesVerb = defineVerb({
  name: 'policies.list',
  method: 'get',
  input: { query: s.ListQuery },
  run: (ctx, query) => listPolicies(ctx, query),
});

/** The dry run: a bad draft `policy` is refused as an invalid policy, the rest as any input. */
export const testPoliciesVerb = defineVerb({
  name: 'policies.test',
  method: 'post',
  input: { body: s.TestBody },
  hook: policyValidationHook('policy'),
  run: (ctx, body) => testPolicies(ctx, body),
});

type Saved = { name: string; agentId: string | null; enabled: boolean };

/**
 * The tier's limit counts enabled custom policies at every scope, under the policies lock
 * (docs/architecture.md#verbs). A save adds one when it leaves enabled a policy that is not: a new
 * one, or a disabled one re-enabled. `mode`: whether the verb writes over an existing policy
 * (upsert), only a new one (insert: a restore keeps what is there) or only an existing one (replace).
 */
const policyLimit = <In>(saved: (ctx: TenantCtx, input: In) => Saved, mode: 'upsert' | 'insert' | 'replace'): VerbLimit<In> => ({
  metric: 'custom_policies',
  max: (tier) => tiers[tier].limits.custom_policies,
  lock: (ctx) => `policies:${ctx.tenantId}`,
  count: (tx, ctx) => q.countEnabled(tx, ctx.tenantId),
  adds: async (tx: Tx, ctx, input) => {
    const p = saved(ctx, input);
    if (!p.enabled) return false;
    const existing = await q.policyAt(tx, ctx.tenantId, p.name, p.agentId);
    if (!existing) return mode !== 'replace'; // a replace of nothing is the verb's 404
    return mode !== 'insert' && !existing.enabled;
  },
  message: (max, tier) => `The ${tier} tier allows ${max} custom policies`,
});

const policyHook = policyValidationHook();

/** Create, or update the policy of that name at that scope (POST /v1/control/policies). */
export const createPolicyVerb = defineVerb({
  name: 'policies.create',
  method: 'post',
  feature: 'draft_policies',
  input: { body: s.PolicyBody },
  hook: policyHook,
  check: (ctx, body) => void admitPolicy(ctx, body),
  limit: policyLimit(admitPolicy, 'upsert'),
  run: (ctx, body) => createPolicy(ctx, body),
});

/**
 * A policy of a bundle (the importer's `policy` line): the create verb's rules and limit, but a
 * policy of that name at that scope is kept as it is, so it adds nothing to the count.
 */
export const restorePolicyVerb = defineVerb({
  name: 'policies.create',
  method: 'post',
  feature: 'draft_policies',
  input: { body: s.PolicyBody },
  hook: policyHook,
  check: (ctx, body) => void admitPolicy(ctx, body),
  limit: policyLimit(admitPolicy, 'insert'),
  run: (ctx, body) => restorePolicy(ctx, body),
});

/** Replace the policy of that name (PUT): re-enabling a disabled one needs room under the limit. */
export const replacePolicyVerb = defineVerb({
  name: 'policies.replace',
  method: 'put',
  feature: 'draft_policies',
  input: { params: s.NameParams, body: s.ReplaceBody },
  hook: policyHook,
  check: (ctx, input) => void admitReplacement(ctx, input),
  limit: policyLimit(admitReplacement, 'replace'),
  run: (ctx, input) => replacePolicy(ctx, input),
});
