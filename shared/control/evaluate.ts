import type { ActionInput, PolicyDefinition, PolicyResult, RuleMatch } from './types';

/**
 * PLACEHOLDER until the policy engine lands (issue 12, policies helper): evaluates every enabled
 * policy whose step_types include `action` with plain RegExp. The real engine keeps this signature.
 */
export function evaluatePolicies(policies: PolicyDefinition[], input: ActionInput): PolicyResult & { matches: RuleMatch[] } {
  const started = performance.now();
  const text = `${input.action} ${JSON.stringify(input.params)}`;
  const matches: RuleMatch[] = [];
  const applicable = policies.filter((p) => p.enabled && p.step_types.includes('action'));
  for (const policy of applicable) {
    policy.rules.forEach((rule, rule_index) => {
      const found = new RegExp(rule.match, 'i').exec(text);
      if (!found) return;
      const on_violation = rule.on_violation ?? (rule.severity === 'critical' ? 'block' : rule.severity === 'high' ? 'require_approval' : 'warn');
      matches.push({ policy: policy.name, rule_index, severity: rule.severity, on_violation, reason: (rule.reason ?? 'matched {match}').replace('{match}', found[0]), confidence: rule.confidence ?? 0.85, match: found[0], field: '$' });
    });
  }
  const top = matches.find((m) => m.on_violation === 'block') ?? matches.find((m) => m.on_violation === 'require_approval');
  return {
    status: top ? (top.on_violation === 'block' ? 'blocked' : 'pending_review') : 'allowed',
    risk_score: top ? 0.9 : matches.length ? 0.3 : 0,
    evaluation_time_ms: performance.now() - started,
    ...(top ? { triggered_policy: top.policy, reason: top.reason, severity: top.severity } : {}),
    warnings: matches.filter((m) => m.on_violation === 'warn').map((m) => m.reason),
    policies_evaluated: applicable.map((p) => p.name),
    violations: matches.length ? matches : null,
    matches,
  };
}
