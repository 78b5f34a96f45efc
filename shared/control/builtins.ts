import type { PolicyDefinition, PolicyRule, PolicyStepType } from './types';

/**
 * The two built-in policies: always active, for every tenant and agent, never deleted.
 * Listed as `FinancialSafety` / `DataExfiltration`; evaluation results name them
 * `FinancialSafetyPolicy` / `DataExfiltrationPolicy`. docs/governed-actions.md#policies has these
 * tables in prose; test/policy-engine.test.ts runs realistic payloads against every rule.
 *
 * Rules see the action as compact JSON, `{"action":"stripe.payouts.create","params":{...}}`, so a
 * rule can anchor on a key (`"amount"\s*:`). Credential rules set `redact`: the matched secret is
 * never echoed back (not in `match`, not in `reason`, not in the audit trail of the action).
 */

/** An amount of at least 10,000: five or more digits, or digits with thousands separators. */
const AMOUNT_10K = String.raw`(?:\d{5,}|\d{2,3},\d{3}|\d{1,3}(?:,\d{3}){2,})(?:\.\d{1,2})?`;
/** An amount of at least 1,000. */
const AMOUNT_1K = String.raw`(?:\d{4,}|\d{1,3}(?:,\d{3})+)(?:\.\d{1,2})?`;
/** A money field (`"amount": 25000`, `"amount":"25,000.00"`) or a currency-marked figure in text. */
const money = (amount: string) => String.raw`(?:"(?:amount|amount_cents|value|total|sum|payout_amount)"\s*:\s*"?|(?:[$€£]|usd|eur|gbp|chf)\s?)${amount}`;

/** Words of a money transfer, also inside identifiers (`bank.wire_transfer`, `createPayout`). */
const TRANSFER_CONTEXT = String.raw`wire|transfer|remit|payout|sepa|swift|iban|(?:\b|_)ach(?:\b|_)|send_?money`;

export const FINANCIAL_SAFETY_RULES: PolicyRule[] = [
  {
    match: money(AMOUNT_10K),
    context_requires: TRANSFER_CONTEXT,
    severity: 'high',
    on_violation: 'require_approval',
    confidence: 0.9,
    reason: 'Transfer of {match} is at or over the 10,000 threshold and needs approval',
  },
  {
    match: String.raw`(?:stripe|paypal|braintree|adyen|wise|square(?:up)?)[\w./:-]{0,40}(?:payouts?|transfers?)\b`,
    severity: 'high',
    on_violation: 'require_approval',
    confidence: 0.85,
    reason: 'Payout through a payment API ({match}) needs approval',
  },
  {
    match: String.raw`(?:stripe|paypal|braintree|adyen|square(?:up)?)[\w./:-]{0,40}(?:charges?|payment_intents?|captures?|subscriptions?)\b`,
    severity: 'medium',
    on_violation: 'warn',
    confidence: 0.8,
    reason: 'Charge through a payment API ({match})',
  },
  {
    match: money(AMOUNT_10K),
    context_requires: 'refund',
    severity: 'high',
    on_violation: 'require_approval',
    confidence: 0.85,
    reason: 'Refund of {match} is at or over 10,000 and needs approval',
  },
  {
    match: money(AMOUNT_1K),
    context_requires: 'refund',
    severity: 'medium',
    on_violation: 'warn',
    confidence: 0.75,
    reason: 'Refund of {match} is over 1,000',
  },
  {
    match: String.raw`\b(?:0x[0-9a-f]{40}|bc1[02-9ac-hj-np-z]{25,59})\b`,
    context_requires: 'send|transfer|withdraw|payout',
    severity: 'high',
    on_violation: 'require_approval',
    confidence: 0.85,
    reason: 'Crypto transfer to wallet {match} needs approval',
  },
  {
    match: '"(?:iban|routing_number|account_number|external_account|beneficiary|bank_account)"',
    context_requires: 'update|change|add|create|set|replace|modify',
    severity: 'medium',
    on_violation: 'warn',
    confidence: 0.7,
    reason: 'Changes payout bank details ({match})',
  },
];

const redacted = { redact: true } as const;

export const DATA_EXFILTRATION_RULES: PolicyRule[] = [
  {
    match: '-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----',
    severity: 'critical',
    on_violation: 'block',
    confidence: 0.99,
    reason: 'A private key is in the payload',
    ...redacted,
  },
  {
    match: String.raw`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`,
    severity: 'critical',
    on_violation: 'block',
    confidence: 0.95,
    reason: 'An AWS access key id is in the payload',
    ...redacted,
  },
  {
    match: String.raw`aws_secret_access_key\W{1,5}[A-Za-z0-9/+]{40}`,
    severity: 'critical',
    on_violation: 'block',
    confidence: 0.95,
    reason: 'An AWS secret access key is in the payload',
    ...redacted,
  },
  {
    match: String.raw`\b(?:(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{60,})\b`,
    severity: 'critical',
    on_violation: 'block',
    confidence: 0.95,
    reason: 'A GitHub token is in the payload',
    ...redacted,
  },
  {
    match: String.raw`\bxox[abposr]-[0-9A-Za-z-]{10,}`,
    severity: 'critical',
    on_violation: 'block',
    confidence: 0.95,
    reason: 'A Slack token is in the payload',
    ...redacted,
  },
  {
    match: String.raw`\b(?:sk|rk)_live_[0-9A-Za-z]{16,}`,
    severity: 'critical',
    on_violation: 'block',
    confidence: 0.95,
    reason: 'A live Stripe secret key is in the payload',
    ...redacted,
  },
  {
    match: String.raw`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`,
    severity: 'high',
    on_violation: 'require_approval',
    confidence: 0.8,
    reason: 'A JSON Web Token is in the payload',
    ...redacted,
  },
  {
    match: String.raw`\b(?:password|passwd|pwd|passphrase|client_secret|api[_-]?key|secret[_-]?key|access[_-]?token)\b["']?\s*[:=]\s*["']?[^\s"',;&]{6,}`,
    severity: 'high',
    on_violation: 'require_approval',
    confidence: 0.75,
    reason: 'A password or secret value is in the payload',
    ...redacted,
  },
  {
    match: String.raw`\b(?:pastebin\.com|hastebin\.com|paste\.ee|ghostbin\.\w+|dpaste\.(?:com|org)|termbin\.com|transfer\.sh|file\.io|0x0\.st|gist\.github\.com|api\.github\.com/gists|controlc\.com|justpaste\.it|rentry\.(?:co|org)|privatebin\.\w+|paste\.rs)`,
    severity: 'high',
    on_violation: 'require_approval',
    confidence: 0.85,
    reason: 'Upload to a public paste or file-drop site ({match})',
  },
  {
    match: String.raw`\b(?:ngrok\.io|ngrok-free\.app|requestbin\.\w+|webhook\.site|pipedream\.net|interact\.sh|oast\.\w+|burpcollaborator\.net)`,
    severity: 'high',
    on_violation: 'require_approval',
    confidence: 0.8,
    reason: 'Data sent to a request-capture endpoint ({match})',
  },
  {
    match: String.raw`\b(?:export[_ -]?all|dump[_ -]?(?:all|database|db|tables?|users|customers)|select\s+\*\s+from|mysqldump|pg_dump|mongoexport|copy\s+\w+\s+to\s)`,
    severity: 'high',
    on_violation: 'require_approval',
    confidence: 0.8,
    reason: 'Bulk export ({match})',
  },
  {
    match: String.raw`"(?:limit|page_size|per_page|pagesize|max_results|batch_size|max_rows)"\s*:\s*"?\d{5,}`,
    severity: 'high',
    on_violation: 'require_approval',
    confidence: 0.75,
    reason: 'Bulk read ({match})',
  },
  {
    match: String.raw`"(?:to|cc|bcc|recipients|emails|addresses)"\s*:\s*\[(?:\s*(?:"[^"]*"|\{[^{}]*\})\s*,){49,}`,
    severity: 'high',
    on_violation: 'require_approval',
    confidence: 0.85,
    reason: 'Mass e-mail to 50 or more recipients',
  },
  {
    match: String.raw`"(?:to|cc|bcc|recipients)"\s*:\s*"(?:[^"@,;]+@[^"@,;]+[,;]\s*){49,}`,
    severity: 'high',
    on_violation: 'require_approval',
    confidence: 0.85,
    reason: 'Mass e-mail to 50 or more recipients',
  },
  {
    match: String.raw`"bcc"\s*:\s*(?:\[(?:\s*(?:"[^"]*"|\{[^{}]*\})\s*,){9,}|"(?:[^"@,;]+@[^"@,;]+[,;]\s*){9,})`,
    severity: 'medium',
    on_violation: 'warn',
    confidence: 0.7,
    reason: 'Blind copy to 10 or more recipients',
  },
];

/** Only memories that are not the account's own (trust `agent` or `external`): the memory document's trust field. */
const NOT_VERIFIED = '"trust":"(?:agent|external)"';
const EXTERNAL = '"trust":"external"';
const held = (match: string, reason: string, context = NOT_VERIFIED, extra: Partial<PolicyRule> = {}): PolicyRule => ({
  match,
  context_requires: context,
  severity: 'high',
  on_violation: 'require_approval',
  confidence: 0.85,
  reason,
  ...extra,
});

/**
 * The built-in memory policy (step type `memory`, off until `memory_guard` is set in
 * PUT /v1/control/settings): holds for review the common shapes of prompt injection and of secrets in
 * memories an agent or an outside source wrote, so they reach no agent's context before a person
 * has looked. The account's own (`verified`) memories are never held by it.
 */
export const MEMORY_INJECTION_RULES: PolicyRule[] = [
  held(
    String.raw`\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+|your\s+|of\s+)*(?:previous|prior|above|earlier|preceding|system|original)?\s*(?:instructions|prompts?|rules|directions|guidelines)`,
    'An instruction to the agent to drop its instructions ({match})',
  ),
  held(String.raw`\byou\s+are\s+now\b`, 'An instruction that gives the agent a new role ({match})'),
  held(String.raw`\b(?:system\s+prompt|developer\s+message|jailbreak|do\s+anything\s+now)\b`, "Text aimed at the agent's instructions ({match})"),
  held(String.raw`\bdisregard\b`, 'An instruction to disregard something ({match})', NOT_VERIFIED, { severity: 'medium', confidence: 0.6 }),
  held(
    String.raw`<\|(?:im_start|im_end|system|endoftext)\|>|</?(?:tool_call|function_call|tool_use|system)>|"(?:tool_calls|function_call)"\s*:|\[/?INST\]`,
    'Tool-call or chat-template syntax in a memory ({match})',
  ),
  held('-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----', 'A private key is in the memory', NOT_VERIFIED, {
    severity: 'critical',
    confidence: 0.99,
    redact: true,
  }),
  held(String.raw`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`, 'An AWS access key id is in the memory', NOT_VERIFIED, { confidence: 0.95, redact: true }),
  held(String.raw`\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}`, 'An API secret key (sk-...) is in the memory', NOT_VERIFIED, { confidence: 0.9, redact: true }),
  held(
    String.raw`\b(?:(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{60,}|xox[abposr]-[0-9A-Za-z-]{10,}|(?:sk|rk)_live_[0-9A-Za-z]{16,})`,
    'A token is in the memory',
    NOT_VERIFIED,
    {
      confidence: 0.9,
      redact: true,
    },
  ),
  held(String.raw`\bhttps?://[^\s"]+`, 'A URL in a memory from outside the account ({match})', EXTERNAL, { severity: 'medium', confidence: 0.7 }),
];

const builtin = (name: string, description: string, rules: PolicyRule[], stepTypes: PolicyStepType[] = ['action']): PolicyDefinition => ({
  name,
  description,
  step_types: stepTypes,
  whitelisted_domains: [],
  rules,
  enabled: true,
  agent_id: null,
  source: 'builtin',
  version: null,
});

/** As evaluation results name them. */
export const BUILTIN_POLICIES: readonly PolicyDefinition[] = Object.freeze([
  builtin(
    'FinancialSafetyPolicy',
    'Holds large transfers, refunds and payouts through payment APIs for approval; warns on charges and bank-detail changes',
    FINANCIAL_SAFETY_RULES,
  ),
  builtin(
    'DataExfiltrationPolicy',
    'Blocks private keys and credentials in payloads; holds uploads to paste sites, bulk exports and mass e-mail for approval',
    DATA_EXFILTRATION_RULES,
  ),
]);

/**
 * The built-in memory policy, off by default: the memory policy set includes it only while the
 * tenant's `memory_guard` setting is on (shared/control/policy-set.ts).
 */
export const MEMORY_INJECTION_POLICY: PolicyDefinition = Object.freeze(
  builtin(
    'MemoryInjectionPolicy',
    'Off by default (memory_guard in PUT /v1/control/settings): holds memories written by agents or outside sources that carry instructions to the agent, tool-call syntax, credentials, or (external ones) URLs',
    MEMORY_INJECTION_RULES,
    ['memory'],
  ),
);

/** Every built-in, the memory policy included. */
const ALL_BUILTINS: readonly PolicyDefinition[] = [...BUILTIN_POLICIES, MEMORY_INJECTION_POLICY];

/** Listed name (`FinancialSafety`) → the definition. */
export const BUILTIN_BY_LISTED_NAME: ReadonlyMap<string, PolicyDefinition> = new Map(ALL_BUILTINS.map((p) => [p.name.replace(/Policy$/, ''), p]));

/** Names a custom policy may not take (either spelling, any case). */
export function isBuiltinName(name: string): boolean {
  const lower = name.toLowerCase();
  return ALL_BUILTINS.some((p) => p.name.toLowerCase() === lower || p.name.replace(/Policy$/, '').toLowerCase() === lower);
}

/** The listed name of a built-in given either spelling, or null. */
export function builtinListedName(name: string): string | null {
  for (const [listed, def] of BUILTIN_BY_LISTED_NAME) if (listed === name || def.name === name) return listed;
  return null;
}
