import { sql } from '../../../shared/platform/data/db';
import { type ControlSettings, DEFAULT_CONTROL_SETTINGS } from '../../../shared/control/settings';
import type { PolicyRow } from '../../../shared/control/policy-set';
import { type DbOrTx, preparedRows } from '../../../shared/platform/data/db';

/** What the memory policies of a tenant are judged from: its control settings and its enabled custom policies (every agent's). */
export interface Governance {
  settings: ControlSettings;
  /** Enabled rows only; resolvePolicySet (shared/control/policy-set.ts) picks an agent's set from them. */
  policies: PolicyRow[];
  /** The tenant's governance version these were read at (migrations/0051; 0 without a row). */
  version: number;
}

type SettingsTuple = [ControlSettings['approval_mode'], ControlSettings['evaluation_mode'], number, boolean, string[], boolean];
type PolicyTuple = [string, string, string | null, string | null, string[], string[], Record<string, unknown>[], number, string, string];

/**
 * Both reads of a governed store (docs/governed-memories.md) in one fixed statement, run with a kept
 * plan: every store is judged before it is embedded, most of them for a tenant without any memory
 * policy, so this is a round trip on every store whose instance keeps no copy of it
 * (functions/memories/store/governance-cache.ts). Read as two query-builder selects, the settings
 * and then the policies, it was two round trips, one after the other, and the builders' compiling.
 * The policy rows of all agents come back (at most the tier's custom_policies): each agent's set is
 * resolved from them in memory, as loadPolicySet resolves it from the rows of its agent. The
 * tenant's governance version comes in the same statement, so it is the version of what is read.
 */
export async function governanceOf(db: DbOrTx, tenantId: string): Promise<Governance> {
  const [row] = await preparedRows<{ settings: SettingsTuple | string | null; policies: PolicyTuple[] | string; version: string | number }>(
    db,
    sql`SELECT
      ${governanceVersionOf(tenantId)} AS version,
      (SELECT json_build_array(c.approval_mode, c.evaluation_mode, c.min_approvals, c.require_manager, c.allowed_roles, c.memory_guard)
         FROM control_settings c WHERE c.tenant_id = ${tenantId}) AS settings,
      (SELECT coalesce(json_agg(json_build_array(p.id, p.name, p.agent_id, p.description, p.step_types, p.whitelisted_domains,
                                                 p.rules, p.version, p.created_at, p.updated_at) ORDER BY p.id), '[]')
         FROM policies p WHERE p.tenant_id = ${tenantId} AND p.enabled) AS policies`,
  );
  const json = <T>(v: unknown): T => (typeof v === 'string' ? JSON.parse(v) : v) as T;
  const s = json<SettingsTuple | null>(row.settings);
  const settings: ControlSettings = s
    ? { approval_mode: s[0], evaluation_mode: s[1], min_approvals: s[2], require_manager: s[3], allowed_roles: s[4], memory_guard: s[5] }
    : DEFAULT_CONTROL_SETTINGS;
  const policies = json<PolicyTuple[]>(row.policies).map(
    ([id, name, agentId, description, stepTypes, whitelistedDomains, rules, version, createdAt, updatedAt]): PolicyRow => ({
      id,
      tenantId,
      name,
      agentId,
      description,
      stepTypes,
      whitelistedDomains,
      rules,
      enabled: true,
      version,
      createdAt: new Date(createdAt),
      updatedAt: new Date(updatedAt),
    }),
  );
  return { settings, policies, version: Number(row.version) };
}

/** The tenant's governance version (migrations/0051) as a scalar subquery: 0 for a tenant without a row. */
export const governanceVersionOf = (tenantId: string) => sql`coalesce((SELECT g.version FROM governance_versions g WHERE g.tenant_id = ${tenantId}), 0)`;
