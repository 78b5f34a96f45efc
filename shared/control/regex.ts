import { RE2JS } from 're2js';

/**
 * Tenant regexes (policy rules) on a linear-time engine: re2js, a pure-JS port of RE2, so no pattern
 * can backtrack catastrophically, in Node and in workerd alike. Patterns are case-insensitive (spec
 * §2.7), capped at MAX_PATTERN_LENGTH characters, and compiled once per tenant: each tenant's
 * compiled patterns are kept in a cache of its own (`tenantPatterns`), sized to hold its tier's full
 * rule set, so a full set never recompiles between actions and no tenant evicts another's patterns
 * by churning its own.
 *
 * re2js's lazy DFA (`test`) scans a 10 KB payload in ~0.05 ms, its NFA (needed for the position
 * of a match) in ~0.5 ms. Most rules name a word that any match contains (`wire`, `akia`, `pastebin`): each compiled
 * pattern carries those required literals (`required`), and `test`/`find` first look for one of
 * them in the lower-cased text with `indexOf` (microseconds) and skip the engine when none is there.
 */
export const MAX_PATTERN_LENGTH = 1_000;
/** Rules a policy may hold (the policies family validates it); a rule has up to two patterns. */
export const MAX_RULES_PER_POLICY = 100;

export interface CompiledPattern {
  source: string;
  re: RE2JS;
  /** Sets of lower-cased strings; every match contains one string of each set. Null when none is known. */
  required: string[][] | null;
  /** The trigram hashes of each required literal (same shape). */
  grams: number[][][] | null;
  /** Whether the pattern has anchors (`^`, `$`, `\A`, `\z`): a match cannot be searched for in a slice. */
  anchored: boolean;
}

export class PatternError extends Error {}

/** How many patterns this process compiled: what the caches save is observable without timing. */
export const patternStats = { compiled: 0 };

/** Compiles a case-insensitive RE2 pattern, uncached (see `PatternCache`); throws PatternError. */
export function compilePattern(source: string): CompiledPattern {
  if (typeof source !== 'string' || source.length === 0) throw new PatternError('must be a non-empty regular expression');
  if (source.length > MAX_PATTERN_LENGTH) throw new PatternError(`must be at most ${MAX_PATTERN_LENGTH} characters`);
  let re: RE2JS;
  patternStats.compiled++;
  try {
    re = RE2JS.compile(source, RE2JS.CASE_INSENSITIVE);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    throw new PatternError(`is not a valid RE2 regular expression (${message}); backreferences and lookarounds are not supported`);
  }
  const required = requiredLiterals(source);
  return { source, re, required, grams: required && required.map((set) => set.map(literalGrams)), anchored: /[\^$]|\\[Az]/.test(source) };
}

/**
 * Compiled patterns, least recently used first, at most `limit` of them. An evaluation calls
 * `begin()`; a pattern it used is never evicted to make room for another of the same evaluation:
 * a set larger than the limit then keeps its first `limit` patterns and compiles only the rest
 * each time, instead of cycling through the cache and recompiling everything.
 */
export class PatternCache {
  private readonly entries = new Map<string, { pattern: CompiledPattern; turn: number }>();
  private turn = 0;
  private dropped = false;
  constructor(
    public limit: number,
    private readonly onGrow: (by: number) => void = () => {},
  ) {}

  get size() {
    return this.entries.size;
  }

  begin(): void {
    this.turn++;
  }

  get(source: string): CompiledPattern {
    const hit = this.entries.get(source);
    if (hit) {
      this.entries.delete(source);
      hit.turn = this.turn;
      this.entries.set(source, hit);
      return hit.pattern;
    }
    const pattern = validated.get(source) ?? compilePattern(source);
    this.keep(source, pattern);
    return pattern;
  }

  /** Empties the cache for good: an evaluation still holding it compiles without keeping. */
  drop(): void {
    this.dropped = true;
    this.entries.clear();
  }

  private keep(source: string, pattern: CompiledPattern) {
    if (this.dropped) return;
    while (this.entries.size >= this.limit) {
      const [oldest, entry] = this.entries.entries().next().value as [string, { turn: number }];
      if (entry.turn === this.turn) return;
      this.entries.delete(oldest);
      this.onGrow(-1);
    }
    this.entries.set(source, { pattern, turn: this.turn });
    this.onGrow(1);
  }

  /** Compiles (or takes from validation) the patterns a tenant just stored, so its next action finds them compiled. */
  warm(sources: string[]): void {
    this.begin();
    for (const source of sources) this.get(source);
  }
}

/**
 * Patterns validated lately (a policy write validates each before storing it), handed to the
 * writer's tenant cache by `warm` so a write compiles each pattern once. Bounded and shared: a miss
 * only costs a compilation.
 */
const VALIDATED_KEPT = 4 * MAX_RULES_PER_POLICY;
const validated = new Map<string, CompiledPattern>();

/** Kept per tenant: its tier's full set (every rule with a context pattern) plus one draft policy for the dry run. */
export const patternsKeptFor = (customPolicies: number | null) => (Math.min(customPolicies ?? Infinity, MAX_POLICIES_KEPT) + 1) * MAX_RULES_PER_POLICY * 2;
/** A tier without a policy limit (Enterprise) keeps this many policies' patterns; the rest compile within the evaluation budgets. */
export const MAX_POLICIES_KEPT = 50;
/**
 * Patterns kept in the whole process (about 10 KB each): when the tenants' caches together exceed
 * it, the least recently used tenant's cache is dropped. A tenant's own churn never grows its cache
 * past its limit, so it cannot push another tenant out.
 */
export const TOTAL_PATTERNS_KEPT = 40_000;
/** Tenants with a cache (most hold a few patterns or none): past it, the least recently used one is dropped. */
const TENANT_CACHES_KEPT = 10_000;
const tenantCaches = new Map<string, PatternCache>();
let totalKept = 0;

/** The tenant's pattern cache, its limit following its tier. */
export function tenantPatterns(tenantId: string, customPolicies: number | null): PatternCache {
  let cache = tenantCaches.get(tenantId);
  if (cache) tenantCaches.delete(tenantId);
  else
    cache = new PatternCache(0, (by) => {
      totalKept += by;
      if (by > 0) dropIdleTenants(tenantId);
    });
  cache.limit = patternsKeptFor(customPolicies);
  tenantCaches.set(tenantId, cache);
  if (tenantCaches.size > TENANT_CACHES_KEPT) dropIdleTenants(tenantId, true);
  return cache;
}

function dropIdleTenants(growing: string, oneMore = false) {
  for (const [tenantId, cache] of tenantCaches) {
    if (totalKept <= TOTAL_PATTERNS_KEPT && !oneMore) return;
    if (tenantId === growing) continue;
    oneMore = false;
    tenantCaches.delete(tenantId);
    totalKept -= cache.size;
    cache.drop();
  }
}

/** The problem with a pattern, or null when it compiles. */
export function patternProblem(source: string): string | null {
  try {
    if (validated.has(source)) return null;
    const pattern = compilePattern(source);
    if (validated.size >= VALIDATED_KEPT) validated.delete(validated.keys().next().value as string);
    validated.set(source, pattern);
    return null;
  } catch (err) {
    return err instanceof PatternError ? err.message : String(err);
  }
}

/**
 * The text as the prefilter sees it: lower-cased, with the two non-ASCII letters whose simple case
 * folding is ASCII (U+017F long s → s; U+212A Kelvin sign already lower-cases to k) folded too, and
 * a 65,536-bit set of the hashes of its character trigrams. A literal whose trigrams are not all in
 * the set is not in the text; only the others are looked for with `includes`, so hundreds of rules
 * cost tens of microseconds.
 */
export interface TextIndex {
  folded: string;
  grams: Uint32Array;
}

const GRAM_BITS = 1 << 16;
const gramHash = (a: number, b: number, c: number) => (Math.imul(a, 0x9e3779b1) ^ Math.imul(b, 0x85ebca77) ^ Math.imul(c, 0xc2b2ae3d)) >>> 16;
const literalGrams = (literal: string) => {
  const out: number[] = [];
  for (let i = 0; i + 3 <= literal.length; i++) out.push(gramHash(literal.charCodeAt(i), literal.charCodeAt(i + 1), literal.charCodeAt(i + 2)));
  return out;
};

export function foldForPrefilter(text: string): string {
  const lower = text.toLowerCase();
  return lower.includes('\u017f') ? lower.replaceAll('\u017f', 's') : lower;
}

export function indexText(text: string): TextIndex {
  const folded = foldForPrefilter(text);
  const grams = new Uint32Array(GRAM_BITS / 32);
  for (let i = 0; i + 3 <= folded.length; i++) {
    const h = gramHash(folded.charCodeAt(i), folded.charCodeAt(i + 1), folded.charCodeAt(i + 2));
    grams[h >>> 5] |= 1 << (h & 31);
  }
  return { folded, grams };
}

/** Whether the prefilter lets the pattern possibly match the indexed text: one literal of each set is there. */
export function mayMatch(p: CompiledPattern, index: TextIndex): boolean {
  if (!p.required) return true;
  const { folded, grams } = index;
  for (let k = 0; k < p.required.length; k++) {
    const set = p.required[k];
    let found = false;
    candidates: for (let j = 0; j < set.length; j++) {
      for (const h of p.grams![k][j]) if ((grams[h >>> 5] & (1 << (h & 31))) === 0) continue candidates;
      if (folded.includes(set[j])) {
        found = true;
        break;
      }
    }
    if (!found) return false;
  }
  return true;
}

/** The leftmost match in `text`: its start and end offsets (UTF-16 units), or null. */
export function findMatch(p: CompiledPattern, text: string, index: TextIndex = indexText(text)): { start: number; end: number } | null {
  if (!mayMatch(p, index) || !p.re.test(text)) return null;
  const m = p.re.matcher(text);
  if (!m.find()) return null;
  return { start: m.start(), end: m.end() };
}

// ---------------------------------------------------------------------------------------------
// Required literals: a conservative reading of the pattern (Google Code Search's trigram idea,
// with whole literals). Anything the reader does not fully understand yields null (no filter),
// which is always correct: the filter may only ever skip patterns that cannot match.

/** `exact`: every string the node can match (when few); `reqs`: sets of which a match contains one string each. */
type Info = { exact: Set<string> | null; reqs: Set<string>[] };
const MAX_SET = 16;
const MAX_LIT = 64;
class Bail extends Error {}

const exactToReq = (exact: Set<string> | null): Set<string> | null => (exact && exact.size && ![...exact].some((s) => s.length === 0) ? exact : null);
const minLen = (s: Set<string> | null) => (s ? Math.min(...[...s].map((x) => x.length)) : 0);
const withRun = (reqs: Set<string>[], run: Set<string> | null) => {
  const r = exactToReq(run);
  return r ? [...reqs, r] : reqs;
};
/** The strongest single set of a node: what an alternation can carry up. */
const bestOf = (info: Info): Set<string> | null => withRun(info.reqs, info.exact).reduce<Set<string> | null>((a, b) => (minLen(b) > minLen(a) ? b : a), null);

function concat(parts: Info[]): Info {
  // `run`: the strings the current run of adjacent exact parts can match; a part of unknown
  // content (or a run grown too large) closes the run, whose strings are then required.
  let run: Set<string> = new Set(['']);
  let allExact = true;
  let reqs: Set<string>[] = [];
  for (const part of parts) {
    reqs = reqs.concat(part.reqs);
    if (part.exact) {
      const next = new Set<string>();
      for (const a of run) for (const b of part.exact) next.add(a + b);
      if (next.size <= MAX_SET && [...next].every((s) => s.length <= MAX_LIT)) {
        run = next;
        continue;
      }
      reqs = withRun(reqs, run);
      allExact = false;
      run = part.exact.size <= MAX_SET ? new Set(part.exact) : new Set(['']);
    } else {
      reqs = withRun(reqs, run);
      allExact = false;
      run = new Set(['']);
    }
  }
  if (allExact) return { exact: run, reqs };
  return { exact: null, reqs: withRun(reqs, run) };
}

function alternate(options: Info[]): Info {
  let exact: Set<string> | null = new Set();
  for (const o of options) {
    if (!exact || !o.exact) {
      exact = null;
      break;
    }
    for (const s of o.exact) exact.add(s);
    if (exact.size > MAX_SET) exact = null;
  }
  let req: Set<string> | null = new Set();
  for (const o of options) {
    const r = bestOf(o);
    if (!r || !req) {
      req = null;
      break;
    }
    for (const s of r) req.add(s);
  }
  return { exact, reqs: req && req.size <= MAX_SET * 2 ? [req] : [] };
}

const ANY: Info = { exact: null, reqs: [] };
const EMPTY: Info = { exact: new Set(['']), reqs: [] };

/** Parses enough of RE2 syntax to find required literals; throws Bail on anything unusual. */
function parse(src: string): Info {
  let i = 0;
  const alternation = (): Info => {
    const options = [sequence()];
    while (src[i] === '|') {
      i++;
      options.push(sequence());
    }
    return options.length === 1 ? options[0] : alternate(options);
  };
  const sequence = (): Info => {
    const parts: Info[] = [];
    while (i < src.length && src[i] !== '|' && src[i] !== ')') {
      let atom = parseAtom();
      // Quantifiers (possibly several, possibly lazy).
      for (;;) {
        const c = src[i];
        let min: number | null = null;
        if (c === '*' || c === '?') min = 0;
        else if (c === '+') min = 1;
        else if (c === '{') {
          const m = /^\{(\d+)(,(\d*))?\}/.exec(src.slice(i, i + 16));
          if (!m) throw new Bail();
          min = Number(m[1]);
          const exactCount = m[2] === undefined;
          i += m[0].length - 1;
          if (exactCount && min === 1) {
            i++;
            if (src[i] === '?') i++;
            continue;
          }
        } else break;
        i++;
        if (src[i] === '?') i++;
        atom = min === 0 ? ANY : { exact: null, reqs: withRun(atom.reqs, atom.exact) };
      }
      parts.push(atom);
    }
    return parts.length === 0 ? EMPTY : concat(parts);
  };
  const parseAtom = (): Info => {
    const c = src[i];
    if (c === '(') {
      i++;
      if (src[i] === '?') {
        if (src[i + 1] === ':') i += 2;
        else if (src[i + 1] === 'P' && src[i + 2] === '<') i = src.indexOf('>', i) + 1;
        else if (src[i + 1] === '<') i = src.indexOf('>', i) + 1;
        else throw new Bail(); // flag groups change matching: no filter
        if (i <= 0) throw new Bail();
      }
      const inner = alternation();
      if (src[i] !== ')') throw new Bail();
      i++;
      return inner;
    }
    if (c === '[') {
      // Skip the class; RE2 allows ']' first and escapes inside.
      i++;
      if (src[i] === '^') i++;
      if (src[i] === ']') i++;
      while (i < src.length && src[i] !== ']') {
        if (src[i] === '\\') i++;
        else if (src[i] === '[' && src[i + 1] === ':') {
          const end = src.indexOf(':]', i + 2);
          if (end < 0) throw new Bail();
          i = end + 1;
        }
        i++;
      }
      if (src[i] !== ']') throw new Bail();
      i++;
      return ANY;
    }
    if (c === '.') {
      i++;
      return ANY;
    }
    if (c === '^' || c === '$') {
      i++;
      return EMPTY;
    }
    if (c === '\\') {
      const e = src[i + 1];
      if (e === undefined) throw new Bail();
      if (/[bBAz]/.test(e)) {
        i += 2;
        return EMPTY;
      }
      if (/[dDsSwWpP]/.test(e)) {
        i += 2;
        if ((e === 'p' || e === 'P') && src[i] === '{') i = src.indexOf('}', i) + 1;
        else if (e === 'p' || e === 'P') i++;
        if (i <= 0) throw new Bail();
        return ANY;
      }
      if (/[^A-Za-z0-9]/.test(e)) {
        i += 2;
        return lit(e);
      }
      throw new Bail(); // \x41, \Q...\E, \n, \t, octal: no filter
    }
    if (c === '*' || c === '+' || c === '?' || c === '{' || c === ')' || c === '|') throw new Bail();
    // A literal character (a surrogate pair stays one character).
    const code = src.codePointAt(i)!;
    const ch = String.fromCodePoint(code);
    i += ch.length;
    return lit(ch);
  };
  const info = alternation();
  if (i !== src.length) throw new Bail();
  return info;
}

function lit(ch: string): Info {
  // Only ASCII letters and punctuation have simple folding we can mirror with toLowerCase.
  if (ch.charCodeAt(0) > 0x7e || ch.length !== 1) return ANY;
  const lower = ch.toLowerCase();
  // 'k' and 's' also match U+212A and U+017F; foldForPrefilter folds those to ASCII in the text.
  return { exact: new Set([lower]), reqs: [] };
}

/**
 * The required literals of a pattern (lower-cased): sets of which every match contains one string
 * each, strongest first (at most four), or null when none can be established.
 */
export function requiredLiterals(source: string): string[][] | null {
  try {
    const info = parse(source);
    const sets = withRun(info.reqs, info.exact).filter((s) => minLen(s) >= 2);
    const unique = new Map(sets.map((s) => [[...s].sort().join('\u0000'), s]));
    const strongest = [...unique.values()].sort((a, b) => minLen(b) - minLen(a)).slice(0, 4);
    return strongest.length ? strongest.map((s) => [...s]) : null;
  } catch {
    return null;
  }
}
