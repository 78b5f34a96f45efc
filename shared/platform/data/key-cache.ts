import { LRUCache } from 'lru-cache';
import type { KeyRestriction } from '../contract/context';
import type { Tier } from '../contract/tiers';

export interface KeyRecord {
  keyId: string;
  tenantId: string;
  tier: Tier;
  email: string;
  status: 'active' | 'grace' | 'revoked';
  expiresAt: Date | null;
  graceExpiresAt: Date | null;
  /** A restricted key's scopes and confinement; absent for an unrestricted key. */
  restriction?: KeyRestriction;
  /** With Redis (several instances): the tenant's key epoch this record was read under (request-gate.ts). */
  epoch?: string;
}

/**
 * Key lookups by secret hash, kept in memory. Every verb that changes a key or a tenant's tier
 * drops the tenant's entries in the same process before it answers, so a revocation takes
 * effect on the very next request. Used where one process owns the database, and with Redis,
 * where each record carries its tenant's key epoch and every request checks it (request-gate.ts).
 */
export class KeyCache {
  private byHash = new LRUCache<string, KeyRecord>({ max: 10_000 });
  /**
   * Bumped by every forget. A lookup that read the database before a change committed must not
   * store its stale row after the change dropped the cache, so `set` is refused across a bump.
   */
  generation = 0;

  get(hash: string): KeyRecord | undefined {
    return this.byHash.get(hash);
  }

  set(hash: string, record: KeyRecord, readAtGeneration: number): void {
    if (readAtGeneration === this.generation) this.byHash.set(hash, record);
  }

  drop(hash: string): void {
    this.generation += 1;
    this.byHash.delete(hash);
  }

  forgetTenant(tenantId: string): void {
    this.generation += 1;
    for (const [hash, record] of this.byHash.entries()) if (record.tenantId === tenantId) this.byHash.delete(hash);
  }
}
