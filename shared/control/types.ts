/**
 * The governed-actions contract shared by the policies and actions families
 * (docs/architecture.md#approvals). Families import these; neither imports the other.
 */
export const SEVERITIES = ['critical', 'high', 'medium', 'low'] as const;
export type Severity = (typeof SEVERITIES)[number];

/** Rule outcomes, most severe first: when several rules fire the first of these wins. */
export const OUTCOMES = ['block', 'require_approval', 'warn'] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** `memory`: the rule applies to memory writes (docs/governed-memories.md), matched against `MemoryInput.memory`. */
export const POLICY_STEP_TYPES = ['thought', 'action', 'observation', 'output', 'error', 'policy_check', 'memory'] as const;
export type PolicyStepType = (typeof POLICY_STEP_TYPES)[number];

export const CONNECTORS = ['github', 'slack', 'linear', 'pagerduty', 'http'] as const;
export const APPROVAL_MODES = ['solo', 'team', 'enterprise'] as const;
export type ApprovalMode = (typeof APPROVAL_MODES)[number];
export const EVALUATION_MODES = ['enforcement', 'shadow'] as const;
export type EvaluationMode = (typeof EVALUATION_MODES)[number];

export interface PolicyRule {
  match: string;
  severity: Severity;
  on_violation?: Outcome;
  reason?: string;
  context_requires?: string;
  confidence?: number;
  /** Built-in credential rules: the matched text is shown masked in `match` and `reason`. Not settable on custom policies. */
  redact?: boolean;
}

/** One policy as the engine sees it: a built-in, or a stored custom policy at one scope. */
export interface PolicyDefinition {
  /** The name evaluation results report (`FinancialSafetyPolicy` for the built-in `FinancialSafety`). */
  name: string;
  description: string | null;
  step_types: PolicyStepType[];
  whitelisted_domains: string[];
  rules: PolicyRule[];
  enabled: boolean;
  agent_id: string | null;
  source: 'builtin' | 'custom';
  version: number | null;
}

/** What an agent submits: `action` is `connector.operation`, `params` the payload. */
export interface ActionInput {
  action: string;
  params: Record<string, unknown>;
  agent_id: string | null;
}

/**
 * A memory write as policies see it (step type `memory`): rules match the compact JSON
 * `{"memory":{"observation":...,"tags":[...],"source":{"kind":...,"via":...,"ref":...},"trust":...,"agent_id":...}}`.
 */
export interface MemoryInput {
  memory: {
    observation: string;
    tags: string[];
    source: { kind: string; via: string; ref: string | null };
    trust: string;
    agent_id: string | null;
  };
  agent_id: string | null;
}

/** What the engine evaluates: an action, or a memory write. */
export type PolicySubject = ActionInput | MemoryInput;

export const subjectStepType = (s: PolicySubject): 'action' | 'memory' => ('memory' in s ? 'memory' : 'action');

/** One rule that fired, and where: `field` is the JSON path of the params value it matched in. */
export interface RuleMatch {
  policy: string;
  rule_index: number;
  severity: Severity;
  on_violation: Outcome;
  reason: string;
  confidence: number;
  match: string;
  field: string;
}

export type ActionStatus = 'allowed' | 'blocked' | 'pending_review';

/** The policy result object of an evaluated action (`action_id` is added by the actions family when pending). */
export interface PolicyResult {
  status: ActionStatus;
  risk_score: number;
  evaluation_time_ms: number;
  triggered_policy?: string;
  reason?: string;
  severity?: Severity;
  warnings: string[];
  policies_evaluated: string[];
  violations: Array<Omit<RuleMatch, 'field' | 'match'> & { match: string; field: string }> | null;
  action_id?: string;
}
