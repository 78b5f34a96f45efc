import type { TenantCtx } from '../platform/contract/context';
import type { Services } from '../platform/contract/services';

/**
 * The copies of tenants' governance (their memory policies and control settings) that this process
 * keeps for the store path (docs/architecture.md#memory-policies-on-the-store-path). A store checks
 * the copy's version in its transaction, so a stale copy never writes; but a store judged with a
 * stale copy has embedded its text by then, so a copy is only used where a change made through the
 * API since it was read is known before the store embeds:
 *
 * - one process owning the database (embedded): the verbs that change policies or settings drop the
 *   tenant's copy after they commit (`forgetGovernance`), and a copy read before that drop is not
 *   kept (the generation, as KeyCache's);
 * - several Node instances with Redis: those verbs also replace the tenant's key epoch
 *   (request-gate.ts), which every request's gate call checks, and a copy is used only by a request
 *   admitted under the key epoch the copy was read under (`AuthContext.keyEpoch`), so every
 *   instance's next store of the tenant reads its governance first;
 * - elsewhere (Workers, whose isolates share nothing; Postgres without Redis; a job without a
 *   request's epoch) nothing tells an instance of a change: every store reads the governance.
 *
 * The copies live per process on Node, keyed by the request statistics object (one per Services).
 */
const copies = new WeakMap<object, Copies<unknown>>();

export interface Copies<T> {
  kept: Map<string, { epoch: string; governance: T }>;
  /** Bumped by every forget: a copy read before it is not kept. */
  generation: number;
}

/** The epoch a copy of the caller's governance is kept and used under; null: none may be. */
export function copyEpoch(ctx: Pick<TenantCtx, 'services' | 'auth'>): string | null {
  if (ctx.services.gate) return ctx.auth.keyEpoch ?? null;
  return ctx.services.storage === 'embedded' ? '' : null;
}

export function governanceCopies<T>(services: Pick<Services, 'stats'>): Copies<T> {
  let kept = copies.get(services.stats);
  if (!kept) copies.set(services.stats, (kept = { kept: new Map(), generation: 0 }));
  return kept as Copies<T>;
}

/**
 * After a commit that changed a tenant's memory policies or control settings, before the answer:
 * this instance drops its copy, and with Redis every instance's copy goes stale (the key epoch; the
 * tenant's cached keys are read again, once per instance, as after a key change).
 */
export async function forgetGovernance(services: Pick<Services, 'stats' | 'gate'>, tenantId: string): Promise<void> {
  dropGovernance(services, tenantId);
  await services.gate?.bumpKeyEpoch(tenantId);
}

/** Drops this instance's copy of a tenant's governance (a transaction found a newer version). */
export function dropGovernance(services: Pick<Services, 'stats'>, tenantId: string): void {
  const kept = copies.get(services.stats);
  if (!kept) return;
  kept.generation += 1;
  kept.kept.delete(tenantId);
}
