import type { Services } from '../../../shared/platform/contract/services';
import type { TenantCtx } from '../../../shared/platform/contract/context';
import { type Governance, governanceOf } from '../queries/governance';

/**
 * The governance of the tenants that stored lately, kept in the process (docs/governed-memories.md):
 * a store judged with it skips the read before it embeds, and the first statement of its transaction
 * reads the tenant's governance version (migrations/0051) and compares. Kept per process on Node and
 * per isolate on Workers (there every request has services of its own, but the request statistics
 * object lives as long as the isolate), at most CAP tenants, the least recently used dropped first.
 * Nothing here is trusted to let a write commit: only the version its transaction reads does.
 */
const CAP = 1000;
const caches = new WeakMap<object, Map<string, Governance>>();

function cacheOf(services: Services): Map<string, Governance> {
  let cache = caches.get(services.stats);
  if (!cache) caches.set(services.stats, (cache = new Map()));
  return cache;
}

/** The caller's governance: the kept copy unless `fresh` (or none is kept), else read (and kept). */
export async function governanceFor(ctx: TenantCtx, fresh: boolean): Promise<Governance & { cached: boolean }> {
  const cache = cacheOf(ctx.services);
  const kept = fresh ? undefined : cache.get(ctx.tenantId);
  if (kept) {
    cache.delete(ctx.tenantId);
    cache.set(ctx.tenantId, kept);
    return { ...kept, cached: true };
  }
  const read = await governanceOf(ctx.db, ctx.tenantId);
  cache.delete(ctx.tenantId);
  cache.set(ctx.tenantId, read);
  if (cache.size > CAP) cache.delete(cache.keys().next().value!);
  return { ...read, cached: false };
}

/** Drops the kept copy of a tenant's governance: a transaction found a newer version. */
export function forgetGovernance(services: Services, tenantId: string): void {
  cacheOf(services).delete(tenantId);
}
