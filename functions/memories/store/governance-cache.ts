import { copyEpoch, governanceCopies } from '../../../shared/control/governance-copies';
import type { TenantCtx } from '../../../shared/platform/contract/context';
import { type Governance, governanceOf } from '../queries/governance';

/**
 * At most this many tenants' governance kept in a process, the least recently used dropped first
 * (shared/control/governance-copies.ts says where copies are kept and why a stale one is harmless).
 */
const CAP = 1000;

/**
 * The caller's governance: the kept copy unless `fresh`, none is kept, or it was read under another
 * key epoch than the caller's (a policy changed through some instance since), else read (and kept
 * where copies may be). A store judged with it skips the read before it embeds; the first statement
 * of its transaction reads the tenant's governance version (migrations/0051) and compares (write.ts).
 */
export async function governanceFor(ctx: TenantCtx, fresh: boolean): Promise<Governance & { cached: boolean }> {
  const epoch = copyEpoch(ctx);
  if (epoch === null) return { ...(await governanceOf(ctx.db, ctx.tenantId)), cached: false };
  const copies = governanceCopies<Governance>(ctx.services);
  const { kept } = copies;
  const copy = fresh ? undefined : kept.get(ctx.tenantId);
  if (copy && copy.epoch === epoch) {
    kept.delete(ctx.tenantId);
    kept.set(ctx.tenantId, copy);
    return { ...copy.governance, cached: true };
  }
  const generation = copies.generation;
  const read = await governanceOf(ctx.db, ctx.tenantId);
  // A change committed and dropped the copies while this read ran: what it read may predate it.
  if (generation === copies.generation) {
    kept.delete(ctx.tenantId);
    kept.set(ctx.tenantId, { epoch, governance: read });
    if (kept.size > CAP) kept.delete(kept.keys().next().value!);
  }
  return { ...read, cached: false };
}
