import { SEVERITY_WEIGHT } from '../../shared/control/evaluate';
import type { PolicyResult, RuleMatch } from '../../shared/control/types';
import { type RuntimeAgentTools, toolFor } from '../../shared/runtime/tools';

/** The name evaluation results give the capability-pack check. */
export const CAPABILITY_POLICY = 'AgentCapabilities';
/** A tool's risk level counts like a rule of that severity fired with this confidence. */
const TOOL_RISK_CONFIDENCE = 0.5;

type Evaluated = Omit<PolicyResult, 'evaluation_time_ms'> & { evaluation_time_ms: number };

/**
 * Applies a registered runtime agent's capability packs to an evaluated action: agents
 * only use tools in their packs. An action of an agent that is not `active`, or whose packs have no
 * tool named after the action (`github.create_issue`) or its connector (`github`), is blocked by
 * `AgentCapabilities`; an allowed tool's risk level joins the risk score as a rule of that severity
 * with confidence 0.5. `agent` null (not a runtime agent) leaves the result as it is.
 */
export function applyCapabilities(evaluated: Evaluated, agent: RuntimeAgentTools | null, action: string, connector: string | null): Evaluated {
  if (!agent) return evaluated;
  const tool = agent.status === 'active' ? toolFor(agent.tools, action, connector) : null;
  const policies_evaluated = [...evaluated.policies_evaluated, CAPABILITY_POLICY];
  if (tool) {
    const weight = tool.riskLevel ? SEVERITY_WEIGHT[tool.riskLevel] * TOOL_RISK_CONFIDENCE : 0;
    const risk_score = Math.round((1 - (1 - evaluated.risk_score) * (1 - weight)) * 1000) / 1000;
    return { ...evaluated, risk_score, policies_evaluated };
  }
  const reason =
    agent.status === 'active'
      ? `Agent ${agent.agentId} has no capability pack with a tool for ${action}${connector ? ` or ${connector}` : ''}`
      : `Agent ${agent.agentId} is ${agent.status}`;
  const violation: RuleMatch = {
    policy: CAPABILITY_POLICY,
    rule_index: 0,
    severity: 'critical',
    on_violation: 'block',
    reason,
    confidence: 1,
    match: action,
    field: '$.action',
  };
  return {
    ...evaluated,
    status: 'blocked',
    risk_score: 1,
    triggered_policy: CAPABILITY_POLICY,
    reason,
    severity: 'critical',
    policies_evaluated,
    violations: [violation, ...(evaluated.violations ?? [])],
  };
}
