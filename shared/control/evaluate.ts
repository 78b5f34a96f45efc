import { compilePattern, type CompiledPattern, indexText, mayMatch, type TextIndex } from './regex';
import type { ActionInput, Outcome, PolicyDefinition, PolicyResult, PolicyRule, RuleMatch, Severity } from './types';

/**
 * The policy engine (spec §2.7, §3.3; README "Policies"). Pure and synchronous: the actions family
 * and the policy dry run call it with the set from `loadPolicySet`.
 *
 * - Applicable policies: `enabled` and `step_types` including `action`.
 * - The action is matched as one text, its compact JSON `{"action":...,"params":{...}}`; a rule's
 *   `match` may be found anywhere in it (keys and values at any depth), `context_requires` must also
 *   be found somewhere in it. Each rule fires at most once; `field` is the JSON path of the value
 *   (or of the key's value) where its match starts: `$.action`, `$.params.recipients[3]`,
 *   `$.params['odd key']` (see `locate` for which match is reported when there are several).
 * - `on_violation` defaults from severity: critical → block, high → require_approval, medium and
 *   low → warn. The most severe outcome wins; `warn` matches only add `warnings`.
 * - `whitelisted_domains`: a policy is skipped when the payload names at least one host (a URL's
 *   host, an e-mail address's domain) and every host is a whitelisted domain or a subdomain of one.
 * - `risk_score` = 1 − Π(1 − weight(severity) × confidence) over the rules that fired (weights
 *   critical 1, high 0.75, medium 0.5, low 0.25), rounded to 3 decimals; 0 when nothing fires.
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

const compiledPolicies = new WeakMap<PolicyDefinition, CompiledPolicy>();

/** Normalizes a whitelisted domain: lower case, without `*.`, a leading or a trailing dot. */
export const normalizeDomain = (d: string) => d.trim().toLowerCase().replace(/^\*\./, '').replace(/^\.+/, '').replace(/\.+$/, '');

function compilePolicy(def: PolicyDefinition): CompiledPolicy {
  const hit = compiledPolicies.get(def);
  if (hit) return hit;
  const compiled: CompiledPolicy = {
    def,
    applies: def.enabled && def.step_types.some((t) => t.toLowerCase() === 'action'),
    rules: def.rules.map((rule, index) => ({
      index,
      rule,
      match: compilePattern(rule.match),
      context: rule.context_requires ? compilePattern(rule.context_requires) : null,
      outcome: rule.on_violation ?? defaultOutcome(rule.severity),
      confidence: rule.confidence ?? DEFAULT_CONFIDENCE,
    })),
    whitelist: def.whitelisted_domains.map(normalizeDomain).filter(Boolean),
  };
  compiledPolicies.set(def, compiled);
  return compiled;
}

// ---------------------------------------------------------------------------------------------
// The canonical text and where each part of it came from.

const IDENT = /^[A-Za-z_$][\w$]*$/;
const childPath = (parent: string, key: string) => (IDENT.test(key) ? `${parent}.${key}` : `${parent}['${key.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}']`);
const MAX_DEPTH = 64;

export interface CanonicalPayload {
  text: string;
  /** Start offset of each token, ascending; `paths[i]` is the JSON path token i belongs to. */
  starts: number[];
  paths: string[];
}

/** `JSON.stringify({action, params})`, written by hand to remember the JSON path of every token. */
export function canonicalPayload(input: Pick<ActionInput, 'action' | 'params'>): CanonicalPayload {
  const parts: string[] = [];
  const starts: number[] = [];
  const paths: string[] = [];
  let pos = 0;
  const emit = (s: string, path: string) => {
    starts.push(pos);
    paths.push(path);
    parts.push(s);
    pos += s.length;
  };
  const value = (v: unknown, path: string, depth: number): void => {
    if (v === null || typeof v !== 'object') {
      const s = typeof v === 'string' ? JSON.stringify(v) : typeof v === 'number' ? (Number.isFinite(v) ? String(v) : 'null') : typeof v === 'boolean' ? String(v) : 'null';
      emit(s, path);
      return;
    }
    if (depth >= MAX_DEPTH) {
      // Deeper than any caller validates (the dry run allows 32 levels): one token, never a crash.
      let deep: string;
      try {
        deep = JSON.stringify(v) ?? 'null';
      } catch {
        deep = '"[nested too deep]"';
      }
      emit(deep, path);
      return;
    }
    if (Array.isArray(v)) {
      emit('[', path);
      v.forEach((item, i) => {
        if (i) emit(',', path);
        value(item === undefined || typeof item === 'function' ? null : item, `${path}[${i}]`, depth + 1);
      });
      emit(']', path);
      return;
    }
    emit('{', path);
    let first = true;
    for (const [k, item] of Object.entries(v as Record<string, unknown>)) {
      if (item === undefined || typeof item === 'function') continue;
      const at = childPath(path, k);
      emit(`${first ? '' : ','}${JSON.stringify(k)}:`, at);
      first = false;
      value(item, at, depth + 1);
    }
    emit('}', path);
  };
  value({ action: input.action, params: input.params ?? {} }, '$', 0);
  return { text: parts.join(''), starts, paths };
}

/** The index of the token holding `offset`. */
function tokenAt(payload: CanonicalPayload, offset: number): number {
  let lo = 0;
  let hi = payload.starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (payload.starts[mid] <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** The JSON path of the token holding `offset`. */
export function fieldAt(payload: CanonicalPayload, offset: number): string {
  return payload.paths[tokenAt(payload, offset)] ?? '$';
}

const MAX_CANDIDATES = 32;

/**
 * Where a pattern that matches the text (its DFA said so) matches. The NFA that finds positions is
 * about ten times slower than the DFA, so it first runs on small windows: each value holding one of
 * the pattern's required literals, with the token before it (its key) and after it. The first window
 * with a match gives it; when none does (a match across more values, an anchored pattern, a
 * pattern without literals) the NFA runs over the whole text for the leftmost match.
 */
function locate(p: CompiledPattern, payload: CanonicalPayload, index: TextIndex): { start: number; end: number } | null {
  const { text, starts } = payload;
  if (p.required && !p.anchored && index.folded.length === text.length) {
    const tokens = new Set<number>();
    for (const literal of p.required[0]) {
      for (let at = index.folded.indexOf(literal); at >= 0 && tokens.size < MAX_CANDIDATES; at = index.folded.indexOf(literal, at + 1)) tokens.add(tokenAt(payload, at));
    }
    for (const t of [...tokens].sort((a, b) => a - b)) {
      const from = starts[Math.max(0, t - 1)];
      const to = t + 2 < starts.length ? starts[t + 2] : text.length;
      const window = text.slice(from, to);
      if (!p.re.test(window)) continue;
      const m = p.re.matcher(window);
      if (m.find()) return { start: from + m.start(), end: from + m.end() };
    }
  }
  const m = p.re.matcher(text);
  return m.find() ? { start: m.start(), end: m.end() } : null;
}

// ---------------------------------------------------------------------------------------------
// Hosts named in the payload, found without regexes (linear scans around `://` and `@`).

const HOST_CHAR = /[a-z0-9.-]/;
const LOCAL_CHAR = /[a-z0-9._%+-]/;

export function hostsIn(text: string): string[] {
  const lower = text.toLowerCase();
  const hosts = new Set<string>();
  const add = (h: string) => {
    const host = h.replace(/\.+$/, '');
    if (host && /[a-z0-9]/.test(host) && !host.startsWith('.') && !host.startsWith('-')) hosts.add(host);
  };
  for (let i = lower.indexOf('://'); i >= 0; i = lower.indexOf('://', i + 3)) {
    let j = i + 3;
    let authorityEnd = j;
    while (authorityEnd < lower.length && !'/?#"\\ \t\r\n'.includes(lower[authorityEnd])) authorityEnd++;
    // Userinfo ends at the authority's last '@' (looked for inside the authority only: linear).
    const at = lower.slice(j, authorityEnd).lastIndexOf('@');
    if (at >= 0) j += at + 1;
    let k = j;
    while (k < authorityEnd && HOST_CHAR.test(lower[k])) k++;
    add(lower.slice(j, k));
  }
  for (let i = lower.indexOf('@'); i >= 0; i = lower.indexOf('@', i + 1)) {
    if (i === 0 || !LOCAL_CHAR.test(lower[i - 1])) continue;
    let k = i + 1;
    while (k < lower.length && HOST_CHAR.test(lower[k])) k++;
    const domain = lower.slice(i + 1, k);
    if (domain.includes('.')) add(domain);
  }
  return [...hosts];
}

const whitelisted = (host: string, domains: string[]) => domains.some((d) => host === d || host.endsWith(`.${d}`));

// ---------------------------------------------------------------------------------------------

const shown = (s: string) => (s.length > MAX_MATCH_SHOWN ? `${s.slice(0, MAX_MATCH_SHOWN)}…` : s);
const redactedText = (s: string) => `${s.slice(0, 4)}…[redacted ${s.length} characters]`;

/**
 * Evaluates an action against a policy set: the policy result of spec §2.8 (without `action_id`,
 * which the actions family adds) plus every rule that fired, in evaluation order, in `matches`.
 * Throws only for a pattern that does not compile, which stored and built-in policies never hold.
 */
export function evaluatePolicies(policies: PolicyDefinition[], input: ActionInput): PolicyResult & { matches: RuleMatch[] } {
  const started = performance.now();
  const payload = canonicalPayload(input);
  const text = payload.text;
  const index = indexText(text);
  let hosts: string[] | null = null;
  // re2js answers "is there a match" on its lazy DFA (~5 ns a character); only a pattern that
  // matches is searched again for its position (locate), which is rare.
  const tested = new Map<CompiledPattern, boolean>();
  const test = (p: CompiledPattern) => {
    let hit = tested.get(p);
    if (hit === undefined) tested.set(p, (hit = mayMatch(p, index) && p.re.test(text)));
    return hit;
  };

  const matches: RuleMatch[] = [];
  const evaluated: string[] = [];
  for (const def of policies) {
    const policy = compilePolicy(def);
    if (!policy.applies) continue;
    if (policy.whitelist.length) {
      hosts ??= hostsIn(text);
      if (hosts.length && hosts.every((h) => whitelisted(h, policy.whitelist))) continue;
    }
    evaluated.push(def.name);
    for (const r of policy.rules) {
      // Both prefilters first: most rules end here, without running the engine.
      if (!mayMatch(r.match, index) || (r.context && !mayMatch(r.context, index))) continue;
      if (!test(r.match) || (r.context && !test(r.context))) continue;
      const hit = locate(r.match, payload, index);
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
  const result: PolicyResult & { matches: RuleMatch[] } = {
    status: top ? (top.on_violation === 'block' ? 'blocked' : 'pending_review') : 'allowed',
    risk_score: risk,
    evaluation_time_ms: 0,
    ...(top ? { triggered_policy: top.policy, reason: top.reason, severity: top.severity } : {}),
    warnings: matches.filter((m) => m.on_violation === 'warn').map((m) => m.reason),
    policies_evaluated: evaluated,
    violations: matches.length ? matches : null,
    matches,
  };
  result.evaluation_time_ms = Math.round((performance.now() - started) * 1000) / 1000;
  return result;
}
