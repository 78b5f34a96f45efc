import { type CompiledPattern, compilePattern, MAX_RULES_PER_POLICY, PatternError } from './regex';

/**
 * Where compiled patterns are kept (see `regex.ts`): a cache per tenant sized by its tier, bounded
 * for the whole process, and the patterns a policy write just validated.
 */

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
