import { and, eq, isNull, or } from 'drizzle-orm';
import { policies } from '../../schema';
import type { DbOrTx } from '../platform/data/db';
import { type Tier, tiers } from '../platform/contract/tiers';
import { BUILTIN_POLICIES, MEMORY_INJECTION_POLICY } from './builtins';
import { type PatternCache, tenantPatterns } from './pattern-cache';
import type { PolicyDefinition, PolicyRule, PolicyStepType } from './types';

export type PolicyRow = typeof policies.$inferSelect;

/** A stored custom policy as the engine sees it. */
export function definitionOf(row: PolicyRow): PolicyDefinition {
  return {
    name: row.name,
    description: row.description,
    step_types: row.stepTypes as PolicyStepType[],
    whitelisted_domains: row.whitelistedDomains,
    rules: row.rules as unknown as PolicyRule[],
    enabled: row.enabled,
    agent_id: row.agentId,
    source: 'custom',
    version: row.version,
  };
}

/**
 * Built-ins first, then the custom policies by name, where an agent-scoped policy replaces the
 * tenant-wide one of the same name. Only enabled rows take part: a disabled (deleted)
 * agent-scoped policy no longer overrides, and the tenant-wide one applies to that agent again.
 */
export function resolvePolicySet(rows: PolicyRow[], agentId: string | null): PolicyDefinition[] {
  const byName = new Map<string, PolicyRow>();
  for (const row of rows) {
    if (!row.enabled) continue;
    if (row.agentId !== null && row.agentId !== agentId) continue;
    const current = byName.get(row.name);
    if (!current || (current.agentId === null && row.agentId !== null)) byName.set(row.name, row);
  }
  const custom = [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map(definitionOf);
  return [...BUILTIN_POLICIES, ...custom];
}

/**
 * The policies that apply to an action of `agentId` in the tenant: the built-ins plus the enabled
 * custom policies, an agent-scoped one overriding the tenant-wide one of the same name.
 */
export async function loadPolicySet(db: DbOrTx, tenantId: string, agentId: string | null): Promise<PolicyDefinition[]> {
  const scope = agentId === null ? isNull(policies.agentId) : or(isNull(policies.agentId), eq(policies.agentId, agentId));
  const rows = await db
    .select()
    .from(policies)
    .where(and(eq(policies.tenantId, tenantId), eq(policies.enabled, true), scope));
  return resolvePolicySet(rows, agentId);
}

/**
 * The tenant's compiled patterns, kept between actions and sized to its tier's policy limit. Keyed
 * by pattern text, so a changed policy needs no invalidation: its old patterns age out of the
 * tenant's own cache.
 */
export function policyPatterns(tenantId: string, tier: Tier): PatternCache {
  return tenantPatterns(tenantId, tiers[tier].limits.custom_policies);
}

/**
 * The policies a memory write of `agentId` meets (step type `memory`, docs/governed-memories.md):
 * the set an action meets plus the built-in MemoryInjection policy while the tenant's
 * `memory_guard` is on. Policies without step type `memory` are skipped by the engine.
 */
export async function loadMemoryPolicySet(db: DbOrTx, tenantId: string, agentId: string | null, memoryGuard: boolean): Promise<PolicyDefinition[]> {
  const set = await loadPolicySet(db, tenantId, agentId);
  return memoryGuard ? [MEMORY_INJECTION_POLICY, ...set] : set;
}
