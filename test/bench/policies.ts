/**
 * The policy engine in process (no HTTP, no database): what `POST /v1/actions` spends deciding.
 *   1. evaluation of the built-ins plus 25 custom policies × 10 rules on a 10 KB payload,
 *      p50/p95/p99, beside the same rules without the literal prefilter (re2js on every rule) and
 *      with native RegExp (V8's backtracking engine, which a tenant's pattern could hang);
 *   2. the same with a payload that contains every rule's literal (the prefilter never skips);
 *   3. `(a+)+$` on 100 KB with re2js, beside native RegExp on inputs of 16 to 26 characters, whose
 *      time doubles with every character.
 *   npx tsx test/bench/policies.ts [--iterations N]
 */
import { BUILTIN_POLICIES } from '../../shared/control/builtins';
import { EVALUATION_BUDGET } from '../../shared/control/budget';
import { evaluatePolicies } from '../../shared/control/evaluate';
import { canonicalPayload } from '../../shared/control/payload';
import { PatternCache } from '../../shared/control/pattern-cache';
import { compilePattern } from '../../shared/control/regex';
import type { PolicyDefinition, PolicyRule, Severity } from '../../shared/control/types';
import { f2, pct, rng, SMOKE, table } from './lib';

const f3 = (x: number) => x.toFixed(3);
// One cache across runs, as a tenant's is between its actions.
const patterns = new PatternCache(Number.POSITIVE_INFINITY);

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const ITERATIONS = arg('iterations', 2000);
const random = rng(12);
const pick = <T>(xs: T[]) => xs[Math.floor(random() * xs.length)];

// Words the rules look for; the payload text is built from other words, plus a few hits.
const TOPICS = [
  'invoice',
  'payroll',
  'customer',
  'ledger',
  'backup',
  'vendor',
  'contract',
  'salary',
  'audit',
  'tenant',
  'shipment',
  'refund',
  'warehouse',
  'pricing',
  'forecast',
  'incident',
  'deploy',
  'cluster',
  'database',
  'archive',
  'report',
  'budget',
  'account',
  'license',
  'roadmap',
];
const SEVERITIES: Severity[] = ['critical', 'high', 'medium', 'low'];

/** Ten rules in the shapes tenants write: keywords, key/value anchors, URLs, amounts, a context. */
function rulesFor(topic: string, i: number): PolicyRule[] {
  const s = () => pick(SEVERITIES);
  return [
    { match: String.raw`\b(?:drop|truncate)\s+table\s+${topic}s?\b`, severity: 'critical' },
    { match: String.raw`${topic}_(?:secret|token|key)\s*[:=]\s*\S{8,}`, severity: s() },
    { match: String.raw`"${topic}_amount"\s*:\s*"?\d{6,}`, severity: s(), context_requires: 'transfer|payout' },
    { match: String.raw`https?://[\w.-]*${topic}-exfil\.(?:io|dev|net)`, severity: s() },
    { match: String.raw`\bdelete\s+all\s+${topic}s?\b`, severity: 'high', reason: 'Mass delete: {match}' },
    { match: String.raw`\bexport\s+${topic}s?\s+to\s+(?:csv|s3|ftp)`, severity: s() },
    { match: String.raw`${topic}\.(?:purge|wipe|destroy)\(`, severity: s() },
    { match: String.raw`"${topic}_ids"\s*:\s*\[(?:\s*"[^"]*"\s*,){20,}`, severity: s() },
    { match: String.raw`(?:ssn|social security)\s*(?:number)?\s*[:=]?\s*\d{3}-\d{2}-\d{4}`, severity: s(), confidence: 0.7 },
    i % 5 === 0
      ? { match: String.raw`\b\d{4}[ -]\d{4}[ -]\d{4}[ -]\d{4}\b`, severity: 'high', reason: 'Card number' }
      : { match: String.raw`${topic}\s+override\s+approved\s+by\s+\w+`, severity: s() },
  ];
}

const custom: PolicyDefinition[] = TOPICS.map((topic, i) => ({
  name: `Custom${i}`,
  description: null,
  step_types: ['action'],
  whitelisted_domains: i % 4 === 0 ? ['internal.example.com'] : [],
  rules: rulesFor(topic, i),
  enabled: true,
  agent_id: null,
  source: 'custom',
  version: 1,
}));
const policySet = [...BUILTIN_POLICIES, ...custom];

const FILLER =
  'the quarterly summary covers onboarding metrics and latency graphs for the mobile team while the design group reviews feedback from user interviews'.split(
    ' ',
  );
const sentence = (n: number) => Array.from({ length: n }, () => pick(FILLER)).join(' ');

/** About 10 KB: an e-mail-like action with nested lists, and (`hits`) a few things rules catch. */
function payload(extra: Record<string, unknown>) {
  const params: Record<string, unknown> = {
    to: ['ops@example.org', 'finance@example.org'],
    subject: 'Weekly digest',
    body: sentence(700),
    attachments: Array.from({ length: 12 }, (_, i) => ({ name: `report-${i}.pdf`, size: 1000 + i, tags: ['weekly', 'digest'], note: sentence(12) })),
    meta: { trace: 'abc123', nested: { depth: { level: [1, 2, 3, { k: sentence(10) }] } } },
    ...extra,
  };
  const p = { action: 'email.send', params };
  while (canonicalPayload(p).text.length < 10_000) (params.attachments as unknown[]).push({ name: 'extra.txt', size: 1, note: sentence(8) });
  return p;
}

const hits = payload({ comment: 'please delete all invoices before Friday', sql: 'TRUNCATE TABLE ledger' });
const everyLiteral = payload({ words: TOPICS.map((t) => `${t} ${t}_ ${t}. "${t}_amount" ${t}-exfil ${t}s drop table export delete all`).join(' ') });

async function measure(fn: () => unknown, n = ITERATIONS) {
  for (let i = 0; i < Math.min(200, n); i++) await fn(); // warm-up
  const xs: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn();
    xs.push(performance.now() - t0);
  }
  return xs;
}
const stats = (xs: number[]) => [f3(pct(xs, 50)), f3(pct(xs, 95)), f3(pct(xs, 99))];

// The comparisons: every rule through re2js with no prefilter, and through native RegExp.
const allRules = policySet.flatMap((p) => p.rules);
const compiled = allRules.map((r) => ({ m: compilePattern(r.match).re, c: r.context_requires ? compilePattern(r.context_requires).re : null }));
const native = allRules.map((r) => ({ m: new RegExp(r.match, 'i'), c: r.context_requires ? new RegExp(r.context_requires, 'i') : null }));
const re2jsNoFilter = (input: { action: string; params: Record<string, unknown> }) => {
  const text = canonicalPayload(input).text;
  let n = 0;
  for (const r of compiled) if (r.m.matcher(text).find() && (!r.c || r.c.matcher(text).find())) n++;
  return n;
};
const nativeAll = (input: { action: string; params: Record<string, unknown> }) => {
  const text = canonicalPayload(input).text;
  let n = 0;
  for (const r of native) if (r.m.test(text) && (!r.c || r.c.test(text))) n++;
  return n;
};

async function main() {
  const rules = allRules.length;
  console.log(
    `Policy set: ${policySet.length} policies, ${rules} rules (2 built-ins with ${BUILTIN_POLICIES.reduce((n, p) => n + p.rules.length, 0)} + 25 × 10 custom); payload ${canonicalPayload(hits).text.length} characters of JSON; ${ITERATIONS} iterations.\n`,
  );
  const input = (p: typeof hits) => ({ ...p, agent_id: null });
  const once = await evaluatePolicies(policySet, input(hits), EVALUATION_BUDGET, patterns);
  console.log(`Typical payload: ${once.status}, ${once.matches.length} rules fire (${once.matches.map((m) => `${m.policy}#${m.rule_index}`).join(', ')}).\n`);

  const rows: string[][] = [];
  for (const [label, p] of [
    ['typical payload (a few rules fire)', hits],
    ["every rule's literal present (prefilter skips nothing)", everyLiteral],
  ] as const) {
    rows.push([
      `evaluatePolicies (re2js + literal prefilter), ${label}`,
      ...stats(await measure(() => evaluatePolicies(policySet, input(p), EVALUATION_BUDGET, patterns))),
    ]);
    rows.push([`re2js on every rule, no prefilter, ${label}`, ...stats(await measure(() => re2jsNoFilter(p), Math.min(ITERATIONS, 300)))]);
    rows.push([`native RegExp on every rule (backtracking: unsafe), ${label}`, ...stats(await measure(() => nativeAll(p)))]);
  }
  console.log('1-2. Evaluation in process, ms (target p99 ≤ 2 ms)\n');
  console.log(table(['what', 'p50', 'p95', 'p99'], rows));

  const evil = compilePattern('(a+)+$');
  const big = `${'a'.repeat(100_000)}!`;
  const evilTimes = await measure(() => evil.re.matcher(big).find(), 30);
  const evalTimes = await measure(
    () =>
      evaluatePolicies(
        [{ ...custom[0], name: 'Evil', rules: [{ match: '(a+)+$', severity: 'critical' }], whitelisted_domains: [] }],
        { action: 'x', params: { blob: big }, agent_id: null },
        EVALUATION_BUDGET,
        patterns,
      ),
    30,
  );
  console.log('\n3. `(a+)+$` on 100 KB ("a" × 100,000 then "!"), ms (target ≤ 20 ms)\n');
  console.log(
    table(
      ['what', 'p50', 'p95', 'p99'],
      [
        ['re2js NFA alone (matcher.find: the search that also gives the position)', ...stats(evilTimes)],
        ['evaluatePolicies with that rule (payload to JSON, prefilter, re2js)', ...stats(evalTimes)],
      ],
    ),
  );
  const nativeEvil = /(a+)+$/;
  const nrows: string[][] = [];
  for (const n of SMOKE ? [16, 18] : [16, 18, 20, 22, 24, 26]) {
    const s = `${'a'.repeat(n)}!`;
    const t0 = performance.now();
    nativeEvil.test(s);
    const ms = performance.now() - t0;
    const t1 = performance.now();
    evil.re.matcher(s).find();
    nrows.push([String(n), f2(ms), f2(performance.now() - t1)]);
  }
  console.log('\nNative RegExp `(a+)+$` on "a" × n then "!": the time doubles with each character (100 KB would never finish)\n');
  console.log(table(['n', 'native ms', 're2js ms'], nrows));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
