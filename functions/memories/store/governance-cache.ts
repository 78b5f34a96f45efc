import { governanceCopies } from '../../../shared/control/governance-copies';
import type { TenantCtx } from '../../../shared/platform/contract/context';
import { type Governance, governanceOf } from '../queries/governance';

/**
 * At most this many tenants' governance kept in a process, the least recently used dropped first
 * (shared/control/governance-copies.ts says where the copies live and why a stale one is harmless).
 */
const CAP = 1000;

/**
 * The caller's governance: the kept copy unless `fresh` (or none is kept), else read (and kept). A
 * store judged with it skips the read before it embeds; the first statement of its transaction
 * reads the tenant's governance version (migrations/0051) and compares (write.ts).
 */
export async function governanceFor(ctx: TenantCtx, fresh: boolean): Promise<Governance & { cached: boolean }> {
  const cache = governanceCopies<Governance>(ctx.services);
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
