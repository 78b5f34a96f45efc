import { RE2JS } from 're2js';
import { requiredLiterals } from './literals';

/**
 * Tenant regexes (policy rules) on a linear-time engine: re2js, a pure-JS port of RE2, so no pattern
 * can backtrack catastrophically, in Node and in workerd alike. Patterns are case-insensitive,
 * capped at MAX_PATTERN_LENGTH characters, and compiled once per tenant: each tenant's
 * compiled patterns are kept in a cache of its own (`tenantPatterns`), sized to hold its tier's full
 * rule set, so a full set never recompiles between actions and no tenant evicts another's patterns
 * by churning its own.
 *
 * re2js's lazy DFA (`test`) is linear in the text; its NFA (needed for the position of a match)
 * is linear too but several times slower. Most rules name a word that any match contains (`wire`,
 * `akia`, `pastebin`): each compiled pattern carries those required literals (`required`), and
 * `test`/`find` first look for one of them in the lower-cased text with `indexOf`, far cheaper than
 * either engine, and skip the engine when none is there.
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
  return { source, re, required, grams: required ? required.map((set) => set.map(literalGrams)) : null, anchored: /[\^$]|\\[Az]/.test(source) };
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
