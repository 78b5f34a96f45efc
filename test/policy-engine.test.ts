import { describe, expect, it } from 'vitest';
import { EVALUATION_BUDGET } from '../shared/control/budget';
import { BUILTIN_POLICIES } from '../shared/control/builtins';
import { evaluatePolicies } from '../shared/control/evaluate';
import { requiredLiterals } from '../shared/control/literals';
import { MAX_POLICIES_KEPT, PatternCache, patternProblem, patternsKeptFor } from '../shared/control/pattern-cache';
import { canonicalPayload, fieldAt, hostsIn } from '../shared/control/payload';
import { resolvePolicySet } from '../shared/control/policy-set';
import { compilePattern, indexText, mayMatch, patternStats } from '../shared/control/regex';
import type { PolicyDefinition } from '../shared/control/types';

/** The engine's pure parts, directly (the API tests in policies.test.ts cover them end to end). */

const rng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

describe('the literal prefilter never hides a match', () => {
  it('holds for random patterns over random texts (property)', () => {
    const r = rng(7);
    const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)];
    const atoms = [
      'ab',
      'ba',
      'abc',
      'K',
      's',
      'x',
      '.',
      '\\s',
      '\\d',
      '[ab]',
      '\\b',
      '^',
      '$',
      'a*',
      'b+',
      'c?',
      '(?:ab|ca)',
      '(ab|b)+',
      'a{2}',
      'b{1,3}',
      '\\.',
      '-',
      ' ',
    ];
    const pattern = () => {
      const n = 1 + Math.floor(r() * 5);
      let p = Array.from({ length: n }, () => pick(atoms)).join('');
      if (r() < 0.2) p = `${p}|${pick(atoms)}${pick(atoms)}`;
      if (r() < 0.2) p = `(${p})${pick(['*', '+', '?', ''])}`;
      return p;
    };
    const alphabet = ['a', 'b', 'c', 'A', 'B', 'C', 'k', 'K', '\u212a', 's', 'S', '\u017f', ' ', '.', '-', '1', '2', '\n', 'x'];
    let checked = 0;
    for (let i = 0; i < 3000; i++) {
      const source = pattern();
      if (patternProblem(source)) continue;
      const compiled = compilePattern(source);
      for (let j = 0; j < 5; j++) {
        const text = Array.from({ length: Math.floor(r() * 12) }, () => pick(alphabet)).join('');
        if (compiled.re.test(text)) {
          expect(mayMatch(compiled, indexText(text)), `${source} on ${JSON.stringify(text)}`).toBe(true);
          checked += 1;
        }
      }
    }
    expect(checked).toBeGreaterThan(500);
  });

  it('reads the words a match must contain', () => {
    expect(requiredLiterals(String.raw`\bdelete\s+all\s+ledgers?\b`)).toEqual([['delete'], ['ledger'], ['all']]);
    expect(requiredLiterals('pastebin\\.com|hastebin')).toEqual([['pastebin.com', 'hastebin']]);
    expect(requiredLiterals(String.raw`\d{5,}`)).toBeNull();
    expect(requiredLiterals('(?i)abc')).toBeNull();
    expect(requiredLiterals('abc|')).toBeNull();
  });

  it('folds the two non-ASCII letters RE2 case-folds to ASCII', () => {
    for (const [pattern, text] of [
      ['kelvin', '\u212aelvin'],
      ['pass', 'pa\u017f\u017f'],
    ]) {
      const compiled = compilePattern(pattern);
      expect(compiled.re.test(text)).toBe(true);
      expect(mayMatch(compiled, indexText(text))).toBe(true);
    }
  });
});

describe('patterns', () => {
  it('refuses what RE2 cannot run, and overlong patterns', () => {
    expect(patternProblem(String.raw`(a)\1`)).toMatch(/not a valid RE2/);
    expect(patternProblem('a(?=b)')).toMatch(/not a valid RE2/);
    expect(patternProblem('a'.repeat(1001))).toMatch(/at most 1000/);
    expect(patternProblem('(a+)+$')).toBeNull();
  });
});

describe('payload text and paths', () => {
  it('is exactly JSON.stringify({action, params}) and maps offsets to JSON paths', () => {
    const input = { action: 'x.y', params: { a: [1, { 'b c': 'deep' }], n: null, t: true, skip: undefined } };
    const payload = canonicalPayload(input);
    expect(payload.text).toBe(JSON.stringify(input));
    expect(fieldAt(payload, payload.text.indexOf('deep'))).toBe("$.params.a[1]['b c']");
    expect(fieldAt(payload, payload.text.indexOf('"n"'))).toBe('$.params.n');
    expect(fieldAt(payload, payload.text.indexOf('x.y'))).toBe('$.action');
    expect(fieldAt(payload, 0)).toBe('$');
  });

  it('finds URL hosts and e-mail domains without regexes', () => {
    expect(hostsIn(JSON.stringify({ u: 'https://user:pw@Files.Example.com:8443/x?y', m: 'ops@corp.example.org', bare: '@nothing' })).sort()).toEqual([
      'corp.example.org',
      'files.example.com',
    ]);
    // Many URLs without userinfo: each is read on its own (no scan back to the start of the text).
    expect(hostsIn(`${'x://a.io/'.repeat(50_000)}`)).toEqual(['a.io']);
  });

  it('survives a payload nested deeper than JSON.stringify can go', async () => {
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 20_000; i++) deep = { d: deep };
    const result = await evaluatePolicies([...BUILTIN_POLICIES], { action: 'a.b', params: deep, agent_id: null });
    expect(result.status).toBe('allowed');
  });
});

describe('evaluation', () => {
  const policy = (name: string, rules: PolicyDefinition['rules'], extra: Partial<PolicyDefinition> = {}): PolicyDefinition => ({
    name,
    description: null,
    step_types: ['action'],
    whitelisted_domains: [],
    rules,
    enabled: true,
    agent_id: null,
    source: 'custom',
    version: 1,
    ...extra,
  });

  it('takes the most severe outcome, keeps warnings apart and computes the risk score', async () => {
    const result = await evaluatePolicies(
      [
        policy('P', [
          { match: 'alpha', severity: 'low' },
          { match: 'beta', severity: 'high', confidence: 0.5 },
          { match: 'gamma', severity: 'medium', on_violation: 'block', reason: 'Gamma: {match} and {match}' },
        ]),
      ],
      { action: 'a.b', params: { text: 'alpha beta gamma' }, agent_id: null },
    );
    expect(result.status).toBe('blocked');
    expect(result).toMatchObject({ triggered_policy: 'P', reason: 'Gamma: gamma and gamma', severity: 'medium', warnings: ['P rule 0 matched "alpha"'] });
    const expected = 1 - (1 - 0.25 * 0.85) * (1 - 0.75 * 0.5) * (1 - 0.5 * 0.85);
    expect(result.risk_score).toBeCloseTo(expected, 3);
  });

  it('skips disabled policies and those without the action step type; context_requires must match too', async () => {
    const result = await evaluatePolicies(
      [
        policy('Off', [{ match: 'x', severity: 'critical' }], { enabled: false }),
        policy('Thoughts', [{ match: 'x', severity: 'critical' }], { step_types: ['thought'] }),
        policy('Ctx', [{ match: 'x', severity: 'critical', context_requires: 'prod' }]),
      ],
      { action: 'a.x', params: { env: 'staging' }, agent_id: null },
    );
    expect(result).toMatchObject({ status: 'allowed', policies_evaluated: ['Ctx'], violations: null, risk_score: 0 });
  });

  it('resolves the agent override among enabled rows only', () => {
    const row = (agentId: string | null, enabled = true) => ({
      id: `pol_${agentId}`,
      tenantId: 't',
      name: 'Same',
      agentId,
      description: null,
      stepTypes: ['action'],
      whitelistedDomains: [],
      rules: [{ match: agentId ?? 'tenant', severity: 'low' }],
      enabled,
      version: 1,
      createdAt: new Date(0),
      updatedAt: new Date(0),
    });
    const forAgent = resolvePolicySet([row(null), row('a1')], 'a1');
    expect(forAgent.map((p) => p.name)).toEqual([...BUILTIN_POLICIES.map((p) => p.name), 'Same']);
    expect(forAgent.at(-1)!.agent_id).toBe('a1');
    expect(resolvePolicySet([row(null), row('a1')], 'a2').at(-1)!.agent_id).toBeNull();
    expect(resolvePolicySet([row(null), row('a1', false)], 'a1').at(-1)!.agent_id).toBeNull();
  });
});

describe('decoded values', () => {
  const policy = (rules: PolicyDefinition['rules']): PolicyDefinition => ({
    name: 'P',
    description: null,
    step_types: ['action'],
    whitelisted_domains: [],
    rules,
    enabled: true,
    agent_id: null,
    source: 'custom',
    version: 1,
  });

  it('lays strings out decoded, so \\s matches a newline or a tab inside a value', async () => {
    const payload = canonicalPayload({ action: 'db.query', params: { sql: 'DROP\tTABLE x', 'a\nb': 'SELECT *\nFROM customers' } });
    expect(payload.text).toBe('{"action":"db.query","params":{"sql":"DROP\tTABLE x","a\nb":"SELECT *\nFROM customers"}}');
    const result = await evaluatePolicies([policy([{ match: String.raw`drop\s+table`, severity: 'high' }])], {
      action: 'db.query',
      params: { note: 'ok', sql: 'DROP\tTABLE customers' },
      agent_id: null,
    });
    expect(result.matches).toMatchObject([{ match: 'DROP\tTABLE', field: '$.params.sql' }]);
    const builtin = await evaluatePolicies([...BUILTIN_POLICIES], { action: 'db.query', params: { sql: 'SELECT *\nFROM customers' }, agent_id: null });
    expect(builtin.matches).toMatchObject([{ policy: 'DataExfiltrationPolicy', match: 'SELECT *\nFROM', field: '$.params.sql' }]);
    expect(builtin.status).toBe('pending_review');
  });
});

describe('the evaluation budget', () => {
  const policy = (name: string, rules: PolicyDefinition['rules']): PolicyDefinition => ({
    name,
    description: null,
    step_types: ['action'],
    whitelisted_domains: [],
    rules,
    enabled: true,
    agent_id: null,
    source: 'custom',
    version: 1,
  });
  /** Rules with no literal the prefilter can look for: each one runs the engine over the whole text. */
  const literalFree = (n: number, from = 0) =>
    Array.from({ length: n }, (_, i) => ({ match: String.raw`\d{${from + i + 3}}[xyz]`, severity: 'critical' as const }));
  const bigText = 'lorem ipsum dolor sit amet '.repeat(2_000);

  it('holds the action for review, saying why, when the work budget runs out; never allowed', async () => {
    const input = { action: 'a.b', params: { text: bigText }, agent_id: null };
    const full = await evaluatePolicies([policy('Heavy', literalFree(10))], input);
    expect([full.status, full.budget_exceeded]).toEqual(['allowed', null]);
    const cut = await evaluatePolicies([policy('Heavy', literalFree(10))], input, { ...EVALUATION_BUDGET, workChars: bigText.length * 5 });
    expect(cut.status).toBe('pending_review');
    expect(cut.reason).toMatch(/^Policy evaluation budget exceeded: the rules would scan more than/);
    expect(cut.budget_exceeded).toMatch(/would scan more than/);
  });

  it('holds the action when the time budget runs out, and a block that already fired still blocks', async () => {
    const input = { action: 'a.b', params: { text: `${bigText} boom` }, agent_id: null };
    const held = await evaluatePolicies([policy('Slow', literalFree(5))], input, { ...EVALUATION_BUDGET, timeMs: 0 });
    expect(held).toMatchObject({ status: 'pending_review', budget_exceeded: `the rules took more than 0 ms` });
    expect(held.reason).toMatch(/^Policy evaluation budget exceeded/);
    // The built-ins run first and in full: a private key blocks whatever the custom rules' budget.
    const key = {
      action: 'a.b',
      params: { text: bigText, key: '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7x\n-----END RSA PRIVATE KEY-----' },
      agent_id: null,
    };
    const blocked = await evaluatePolicies([...BUILTIN_POLICIES, policy('Slow', literalFree(5))], key, { ...EVALUATION_BUDGET, timeMs: 0 });
    expect(blocked).toMatchObject({ status: 'blocked', triggered_policy: 'DataExfiltrationPolicy' });
    expect(blocked.budget_exceeded).not.toBeNull();
  });

  it('does not read an action longer than the cap, and never meters the built-ins', async () => {
    const long = await evaluatePolicies([...BUILTIN_POLICIES], { action: 'a.b', params: { text: 'x'.repeat(70_000) }, agent_id: null });
    expect(long).toMatchObject({ status: 'pending_review', policies_evaluated: [] });
    expect(long.budget_exceeded).toMatch(/more than the 66560 evaluated per action/);
    const builtins = await evaluatePolicies(
      [...BUILTIN_POLICIES],
      { action: 'db.query', params: { text: bigText, sql: 'SELECT * FROM customers' }, agent_id: null },
      { ...EVALUATION_BUDGET, workChars: 0, timeMs: 0 },
    );
    expect([builtins.status, builtins.budget_exceeded, builtins.triggered_policy]).toEqual(['pending_review', null, 'DataExfiltrationPolicy']);
  });

  it('yields to the event loop between slices: other work runs while a heavy evaluation is under way', async () => {
    let ticks = 0;
    let done = false;
    const tick = () => {
      if (done) return;
      ticks += 1;
      setTimeout(tick, 0);
    };
    setTimeout(tick, 0);
    const result = await evaluatePolicies([policy('Heavy', literalFree(60))], { action: 'a.b', params: { text: bigText }, agent_id: null });
    done = true;
    const during = ticks;
    expect(result.status).toBe('allowed');
    // 60 passes of the engine over 54,000 characters are many slices: other macrotasks ran between them.
    expect(during).toBeGreaterThan(3);
  });
});

describe('a tenant pattern cache', () => {
  it('keeps its first `limit` patterns of a larger set instead of cycling through them, ', () => {
    const cache = new PatternCache(3);
    const sources = ['alpha', 'bravo', 'charlie', 'delta', 'echo'];
    const pass = () => {
      const before = patternStats.compiled;
      cache.begin();
      for (const s of sources) cache.get(s);
      return patternStats.compiled - before;
    };
    expect(pass()).toBe(5);
    // Least recently used would evict each pattern just before its turn; the first three stay.
    expect(pass()).toBe(2);
    expect(cache.size).toBe(3);

    expect(patternsKeptFor(25)).toBe(26 * 200);
    expect(patternsKeptFor(null)).toBe((MAX_POLICIES_KEPT + 1) * 200);
  });
});
