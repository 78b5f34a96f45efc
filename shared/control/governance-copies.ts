import type { Services } from '../platform/contract/services';

/**
 * The copies of tenants' governance (their memory policies and control settings) that this process
 * keeps for the store path (docs/architecture.md#memory-policies-on-the-store-path), per process on
 * Node and per isolate on Workers: there every request has services of its own, but the request
 * statistics object lives as long as the isolate. A store checks the copy's version in its
 * transaction, so a stale copy is never trusted to write; a verb that changes policies or settings
 * drops the tenant's copy after it commits all the same, so that this instance's next store of the
 * tenant reads them before it embeds.
 */
const copies = new WeakMap<object, Map<string, unknown>>();

export function governanceCopies<T>(services: Pick<Services, 'stats'>): Map<string, T> {
  let kept = copies.get(services.stats);
  if (!kept) copies.set(services.stats, (kept = new Map()));
  return kept as Map<string, T>;
}

/** Drops the copy of a tenant's governance: it changed, or a transaction found a newer version. */
export function forgetGovernance(services: Pick<Services, 'stats'>, tenantId: string): void {
  copies.get(services.stats)?.delete(tenantId);
}
