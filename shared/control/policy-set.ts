import type { DbOrTx } from '../platform/db';
import type { PolicyDefinition } from './types';

/**
 * PLACEHOLDER until the policy engine lands: the policies that apply to an action of `agentId` in
 * the tenant (built-ins, plus enabled custom policies where an agent-scoped one overrides the
 * tenant-wide one of the same name). The real one keeps this signature.
 */
export async function loadPolicySet(_db: DbOrTx, _tenantId: string, _agentId: string | null): Promise<PolicyDefinition[]> {
  const builtin = (name: string, rules: PolicyDefinition['rules']): PolicyDefinition => ({
    name, description: null, step_types: ['action'], whitelisted_domains: [], rules, enabled: true, agent_id: null, source: 'builtin', version: null,
  });
  return [
    builtin('FinancialSafetyPolicy', [{ match: '"amount"\\s*:\\s*\\d{5,}', severity: 'high', reason: 'Large transfer {match}' }]),
    builtin('DataExfiltrationPolicy', [{ match: '-----BEGIN [A-Z ]*PRIVATE KEY-----', severity: 'critical', reason: 'Private key in payload' }]),
  ];
}
