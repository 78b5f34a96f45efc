import { BUDGET_REASON_PREFIX, EVALUATION_BUDGET, type EvaluationBudget, nextSlice } from './budget';
import { canonicalPayload, fieldAt, hostsIn, locate, whitelisted } from './payload';
import { PatternCache } from './pattern-cache';
import { type CompiledPattern, indexText, mayMatch } from './regex';
import {
  type Outcome,
  type PolicyDefinition,
  type PolicyResult,
  type PolicyRule,
  type PolicySubject,
  type RuleMatch,
  type Severity,
  subjectStepType,
} from './types';

/**
 * The policy engine (docs/governed-actions.md#policies): the actions family and the policy dry run call it with
 * the set from `loadPolicySet`.
 *
 * - Applicable policies: `enabled` and `step_types` including `action`.
 * - The action is matched as one text, `{"action":...,"params":{...}}` laid out as compact JSON but
 *   with every string (key or value) decoded: a newline inside a value is a newline, so `\s` matches
 *   it. A rule's `match` may be found anywhere in it (keys and values at any depth),
 *   `context_requires` must also be found somewhere in it. Each rule fires at most once; `field` is
 *   the JSON path of the value (or of the key's value) where its match starts: `$.action`,
 *   `$.params.recipients[3]`, `$.params['odd key']` (see `locate` for which match is reported when
 *   there are several).
 * - `on_violation` defaults from severity: critical → block, high → require_approval, medium and
 *   low → warn. The most severe outcome wins; `warn` matches only add `warnings`.
 * - `whitelisted_domains`: a policy is skipped when the payload names at least one host (a URL's
 *   host, an e-mail address's domain) and every host is a whitelisted domain or a subdomain of one.
 * - `risk_score` = 1 − Π(1 − weight(severity) × confidence) over the rules that fired (weights
 *   critical 1, high 0.75, medium 0.5, low 0.25), rounded to 3 decimals; 0 when nothing fires.
 *
 * Bounded (see `EVALUATION_BUDGET`): a tenant's rules × its payload is work the tenant chooses, so
 * an evaluation runs in slices that yield to the event loop, within a work and a time budget, and
 * fails closed (held for review, saying why) when either runs out.
 */

export const DEFAULT_CONFIDENCE = 0.85;
export const SEVERITY_WEIGHT: Record<Severity, number> = { critical: 1, high: 0.75, medium: 0.5, low: 0.25 };
const OUTCOME_RANK: Record<Outcome, number> = { block: 3, require_approval: 2, warn: 1 };
const SEVERITY_RANK: Record<Severity, number> = { critical: 4, high: 3, medium: 2, low: 1 };
/** A match longer than this is shown cut (the matched text is echoed in results). */
export const MAX_MATCH_SHOWN = 200;

export const defaultOutcome = (severity: Severity): Outcome => (severity === 'critical' ? 'block' : severity === 'high' ? 'require_approval' : 'warn');

interface CompiledRule {
  index: number;
  rule: PolicyRule;
  match: CompiledPattern;
  context: CompiledPattern | null;
  outcome: Outcome;
  confidence: number;
}

interface CompiledPolicy {
  def: PolicyDefinition;
  applies: boolean;
  rules: CompiledRule[];
  whitelist: string[];
}

/** The built-ins' patterns: ours, a fixed few, compiled once for the process and never evicted. */
const BUILTIN_PATTERNS = new PatternCache(Number.POSITIVE_INFINITY);

/** Normalizes a whitelisted domain: lower case, without `*.`, a leading or a trailing dot. */
export const normalizeDomain = (d: string) => d.trim().toLowerCase().replace(/^\*\./, '').replace(/^\.+/, '').replace(/\.+$/, '');

/**
 * A rule whose patterns are taken from the cache (or compiled) on first use: compiling costs
 * milliseconds a pattern, so it happens inside the evaluation's slices and budget, rule by rule,
 * not all at once before them.
 */
function lazyRule(rule: PolicyRule, index: number, patterns: PatternCache): CompiledRule {
  let match: CompiledPattern | undefined;
  let context: CompiledPattern | null | undefined;
  return {
    index,
    rule,
    get match() {
      return (match ??= patterns.get(rule.match));
    },
    get context() {
      if (context === undefined) context = rule.context_requires ? patterns.get(rule.context_requires) : null;
      return context;
    },
    outcome: rule.on_violation ?? defaultOutcome(rule.severity),
    confidence: rule.confidence ?? DEFAULT_CONFIDENCE,
  };
}

function compilePolicy(def: PolicyDefinition, tenantPatterns: PatternCache, stepType: 'action' | 'memory'): CompiledPolicy {
  const patterns = def.source === 'builtin' ? BUILTIN_PATTERNS : tenantPatterns;
  return {
    def,
    applies: def.enabled && def.step_types.some((t) => t.toLowerCase() === stepType),
    rules: def.rules.map((rule, index) => lazyRule(rule, index, patterns)),
    whitelist: def.whitelisted_domains.map(normalizeDomain).filter(Boolean),
  };
}

// ---------------------------------------------------------------------------------------------

const shown = (s: string) => (s.length > MAX_MATCH_SHOWN ? `${s.slice(0, MAX_MATCH_SHOWN)}…` : s);
const redactedText = (s: string) => `${s.slice(0, 4)}…[redacted ${s.length} characters]`;

export type Evaluation = PolicyResult & {
  matches: RuleMatch[];
  /** Set when the evaluation stopped before every rule ran: what ran out (then the action is held). */
  budget_exceeded: string | null;
};

/**
 * Evaluates an action against a policy set: the policy result (without `action_id`, which the
 * actions family adds) plus every rule that fired, in evaluation order, in `matches`. Runs in
 * slices of `budget.sliceMs`, yielding to the event loop between them. When the payload is longer
 * than `budget.maxChars`, or the work or time budget runs out before every rule ran, it fails
 * closed: the outcome is at least `pending_review` (a block that already fired still blocks), with
 * a reason saying which budget was exceeded, and `budget_exceeded` says the same.
 * Throws only for a pattern that does not compile, which stored and built-in policies never hold.
 * `patterns` is the tenant's cache (`tenantPatterns`); without one, nothing outlives the call.
 */
export async function evaluatePolicies(
  policies: PolicyDefinition[],
  input: PolicySubject,
  budget: EvaluationBudget = EVALUATION_BUDGET,
  patterns: PatternCache = new PatternCache(Number.POSITIVE_INFINITY),
): Promise<Evaluation> {
  patterns.begin();
  const started = performance.now();
  let sliceStart = started;
  /** Time spent on tenants' rules, waits for a turn excluded. */
  let spent = 0;
  let work = 0;
  let stopped: string | null = null;
  const stepType = subjectStepType(input);
  // A memory write is evaluated by the policies of step type `memory` (docs/governed-memories.md).
  const noun = stepType === 'memory' ? 'memory write' : 'action';
  const payload = canonicalPayload(input);
  const text = payload.text;
  const matches: RuleMatch[] = [];
  const evaluated: string[] = [];
  if (text.length > budget.maxChars) {
    stopped = `the ${noun} is ${text.length} characters long as evaluated, more than the ${budget.maxChars} evaluated per ${noun}`;
  }
  const index = stopped ? null : indexText(text);
  let hosts: string[] | null = null;
  // re2js answers "is there a match" on its lazy DFA; only a pattern that matches is searched
  // again for its position (locate), which is rare.
  const tested = new Map<CompiledPattern, boolean>();
  /** Charges `chars` of engine work; false (and the evaluation stops) when that exceeds the budget. */
  let metered = false;
  const charge = (chars: number) => {
    if (!metered) return true;
    if (work + chars > budget.workChars) {
      stopped = `the rules would scan more than ${budget.workChars} characters of this ${text.length}-character ${noun}`;
      return false;
    }
    work += chars;
    return true;
  };
  const test = (p: CompiledPattern): boolean | null => {
    let hit = tested.get(p);
    if (hit !== undefined) return hit;
    if (!mayMatch(p, index!)) hit = false;
    else if (!charge(text.length)) return null;
    else hit = p.re.test(text);
    tested.set(p, hit);
    return hit;
  };
  /** Between rules: yields when the slice is used up; false (and the evaluation stops) past the time budget. */
  const checkpoint = async (yieldNow = false) => {
    if (metered && spent > budget.timeMs) {
      stopped = `the rules took more than ${budget.timeMs} ms`;
      return false;
    }
    if (!yieldNow && performance.now() - sliceStart < budget.sliceMs) return true;
    await nextSlice();
    sliceStart = performance.now();
    return true;
  };

  evaluation: for (const def of stopped ? [] : policies) {
    const policy = compilePolicy(def, patterns, stepType);
    if (!policy.applies) continue;
    if (policy.whitelist.length) {
      hosts ??= hostsIn(text);
      if (hosts.length && hosts.every((h) => whitelisted(h, policy.whitelist))) continue;
    }
    evaluated.push(def.name);
    // The built-ins are ours and bounded: they always run in full. Tenants' rules are metered.
    metered = def.source !== 'builtin';
    for (const r of policy.rules) {
      if (!(await checkpoint())) break evaluation;
      let ruleStart = performance.now();
      try {
        // Both prefilters first: most rules end here, without running the engine.
        if (!mayMatch(r.match, index!) || (r.context && !mayMatch(r.context, index!))) continue;
        const hitMatch = test(r.match);
        if (hitMatch === null) break evaluation;
        if (!hitMatch) continue;
        if (r.context) {
          const hitContext = test(r.context);
          if (hitContext === null) break evaluation;
          if (!hitContext) continue;
        }
        // The position search is the costly part: it starts a slice of its own.
        if (metered) spent += performance.now() - ruleStart;
        const resumed = await checkpoint(true);
        ruleStart = performance.now();
        if (!resumed) break evaluation;
        const found = locate(r.match, payload, index!);
        work += found.scanned;
        const hit = found.hit;
        if (!hit) continue;
        const raw = text.slice(hit.start, hit.end);
        const matchText = r.rule.redact ? redactedText(raw) : shown(raw);
        matches.push({
          policy: def.name,
          rule_index: r.index,
          severity: r.rule.severity,
          on_violation: r.outcome,
          reason: (r.rule.reason ?? `${def.name} rule ${r.index} matched "{match}"`).replaceAll('{match}', matchText),
          confidence: r.confidence,
          match: matchText,
          field: fieldAt(payload, hit.start),
        });
      } finally {
        if (metered) spent += performance.now() - ruleStart;
      }
    }
  }

  let top: RuleMatch | undefined;
  let survival = 1;
  for (const m of matches) {
    survival *= 1 - SEVERITY_WEIGHT[m.severity] * m.confidence;
    if (m.on_violation === 'warn') continue;
    if (
      !top ||
      OUTCOME_RANK[m.on_violation] > OUTCOME_RANK[top.on_violation] ||
      (OUTCOME_RANK[m.on_violation] === OUTCOME_RANK[top.on_violation] &&
        (SEVERITY_RANK[m.severity] > SEVERITY_RANK[top.severity] || (m.severity === top.severity && m.confidence > top.confidence)))
    )
      top = m;
  }
  const risk = Math.round(Math.min(1, Math.max(0, 1 - survival)) * 1000) / 1000;
  const blocked = top?.on_violation === 'block';
  // Fails closed: rules that did not run may have objected, so the action waits for a human
  // (unless a rule that did run already blocks it).
  const held = stopped !== null && !blocked;
  const result: Evaluation = {
    status: blocked ? 'blocked' : top || held ? 'pending_review' : 'allowed',
    risk_score: risk,
    evaluation_time_ms: 0,
    ...(held
      ? { reason: `${BUDGET_REASON_PREFIX}: ${stopped}; not every rule ran, so the ${noun} is held for review` }
      : top
        ? { triggered_policy: top.policy, reason: top.reason, severity: top.severity }
        : {}),
    warnings: matches.filter((m) => m.on_violation === 'warn').map((m) => m.reason),
    policies_evaluated: evaluated,
    violations: matches.length ? matches : null,
    matches,
    budget_exceeded: stopped,
  };
  result.evaluation_time_ms = Math.round((performance.now() - started) * 1000) / 1000;
  return result;
}
