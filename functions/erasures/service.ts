import { eraseHolds } from '../../shared/memory/holds';
import canonicalize from 'canonicalize';
import { sql } from 'drizzle-orm';
import { rows } from '../../shared/platform/data/db';
import { toUrn, newId } from '../../shared/platform/contract/ids';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { notFound } from '../../shared/platform/contract/errors';
import type { PageInput } from '../../shared/platform/data/pagination';
import { registerKey } from '../../shared/platform/data/signing-keys';
import { SIGNATURE_ALGORITHM, type SigningKey } from '../../shared/platform/contract/trace-signing';
import { type Work, write } from '../../shared/platform/data/unit-of-work';
import { adjustLiveMemories } from '../../shared/platform/data/usage';
import { purge } from './purge';
import * as q from './queries';
import { ListPaging } from './schemas';
import { eraseStaged, type Selector, selectMemories } from './select';

export interface EraseInput {
  memory_ids?: string[];
  agent_id?: string;
  tags?: string[];
  space_id?: string;
  before?: Date;
  reason: string;
  dry_run: boolean;
}

/** The selector as the receipt states it: what was asked, ids as urn:uuid, times in ISO 8601. */
function selectorEcho(input: EraseInput) {
  return {
    ...(input.memory_ids ? { memory_ids: [...new Set(input.memory_ids)].map(toUrn) } : {}),
    ...(input.agent_id !== undefined ? { agent_id: input.agent_id } : {}),
    ...(input.tags ? { tags: [...new Set(input.tags)] } : {}),
    ...(input.space_id ? { space_id: toUrn(input.space_id) } : {}),
    ...(input.before ? { before: input.before.toISOString() } : {}),
  };
}

/** Signs the receipt: the JCS bytes of everything but `signature` (docs/security.md#erasure). */
export async function signReceipt<R extends Record<string, unknown>>(key: SigningKey, receipt: R) {
  return { ...receipt, signature: await key.sign(canonicalize(receipt)!) };
}

type Receipt = Awaited<ReturnType<typeof eraseWithin>>;

/**
 * The erasure, inside the caller's transaction: the rollback lock (no rollback restores a memory
 * while it is erased, and none reads history the erasure is removing), the import lock, the
 * selection with its rows locked, the purge (the staged lines of running imports included), the
 * tombstones, the audit entry, the signed receipt and the event.
 */
export async function eraseWithin(
  work: Work<TenantCtx>,
  input: { selector: Selector; echo: Record<string, unknown>; reason: string; dryRun: boolean },
  key: SigningKey,
) {
  const { tx, ctx } = work;
  const { tenantId, now } = ctx;
  await work.lock(`rollback:${tenantId}`);
  // No import chunk stores while the erasure runs, and the staged lines it would store are erased too.
  await work.lock(`import:${tenantId}`);
  const selected = await selectMemories(tx, tenantId, input.selector, now);
  const memoryIds = selected.map((s) => s.id);
  const earliest = selected.length ? new Date(Math.min(...selected.map((s) => s.livedFrom.getTime()))) : null;
  const counts = await purge(tx, { tenantId, memoryIds, earliest, dryRun: input.dryRun });
  counts.import_lines = await eraseStaged(tx, tenantId, input.selector, input.dryRun);
  counts.held_memories = await eraseHolds(tx, tenantId, input.selector, input.dryRun);
  const erasureId = newId('erasure');
  let head: { seq: number; hash: string } | null = null;
  if (!input.dryRun) {
    await q.insertTombstones(tx, tenantId, erasureId, now, selected);
    const live = selected.filter((s) => s.live).length;
    head = await work.audit({
      operation: 'erasure.completed',
      resourceType: 'erasure',
      resourceId: erasureId,
      metadata: { erasure_id: erasureId, memory_count: memoryIds.length, counts },
    });
    if (live) await adjustLiveMemories(tx, tenantId, -live);
    await registerKey(tx, key, SIGNATURE_ALGORITHM, now);
  }
  const receipt = await signReceipt(key, {
    erasure_id: erasureId,
    erased_at: now.toISOString(),
    reason: input.reason,
    dry_run: input.dryRun,
    selector: input.echo,
    memory_ids: memoryIds.map(toUrn),
    counts,
    audit_seq: head?.seq ?? null,
    chain_head: head?.hash ?? null,
    signature_algorithm: SIGNATURE_ALGORITHM,
    key_id: key.keyId,
  });
  if (!input.dryRun) {
    const { signature, ...signed } = receipt;
    await q.insertErasure(tx, { id: erasureId, tenantId, erasedAt: now, receipt: signed, signature });
    await work.event('erasure.completed', { erasure_id: erasureId, memory_count: memoryIds.length, counts });
  }
  return receipt;
}

/** A space the caller owns, deleted or not (its memories' history outlives it); else 404 as for no space. */
async function requireOwnSpace(ctx: TenantCtx, spaceId: string) {
  const [found] = await rows(ctx.db, sql`SELECT 1 FROM context_spaces WHERE id = ${spaceId}::uuid AND owner_tenant_id = ${ctx.tenantId}`);
  if (!found) throw notFound('Space');
}

export async function erase(ctx: TenantCtx, input: EraseInput) {
  if (input.space_id) await requireOwnSpace(ctx, input.space_id);
  const key = await ctx.services.signingKey();
  const selector: Selector = {
    memoryIds: input.memory_ids ? [...new Set(input.memory_ids)] : undefined,
    agentId: input.agent_id,
    tags: input.tags,
    spaceId: input.space_id,
    before: input.before,
  };
  return write(ctx, (work) => eraseWithin(work, { selector, echo: selectorEcho(input), reason: input.reason, dryRun: input.dry_run }, key));
}

const toReceipt = (row: q.ErasureRow) => ({ ...(row.receipt as Omit<Receipt, 'signature'>), signature: row.signature });

export async function listErasures(ctx: TenantCtx, input: PageInput) {
  const { page, total } = await q.listErasures(ctx.db, ctx.tenantId, input);
  return { erasures: page.map(toReceipt), ...ListPaging.meta(total, input, page.length) };
}

export async function getErasure(ctx: TenantCtx, input: { erasureId: string }) {
  const row = await q.erasureOf(ctx.db, ctx.tenantId, input.erasureId);
  if (!row) throw notFound('Erasure');
  return toReceipt(row);
}
