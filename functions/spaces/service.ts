import type { z } from '@hono/zod-openapi';
import { v7 as uuidv7 } from 'uuid';
import { appendAudit } from '../../shared/audit';
import type { Actor, AuthContext } from '../../shared/context';
import type { DbOrTx } from '../../shared/db';
import { embedAll } from '../../shared/embeddings';
import { AppError, notFound } from '../../shared/errors';
import { toUrn } from '../../shared/memory-access';
import { toMemoryDto, vectorLiteral } from '../../shared/memory-rows';
import { recordMilestone } from '../../shared/milestones';
import type { Services } from '../../shared/services';
import { requireFeature } from '../../shared/tiers';
import * as q from './queries';
import { type CreateSpaceBody, type SpaceMemoriesQuery, toSpaceDto, type UpdateSpaceBody } from './schemas';

type CreateInput = z.infer<typeof CreateSpaceBody>;
type UpdateInput = z.infer<typeof UpdateSpaceBody>;
type MemoriesInput = z.infer<typeof SpaceMemoriesQuery>;

const forbidden = () => new AppError('FORBIDDEN', 'You have no access to this context space');
const ownerOnly = () => new AppError('OWNER_ONLY', 'Only the owner of a context space may change or delete it');

/** Granting other tenants is a Pro+ feature; clearing the list is always allowed. */
function checkTenantGrants(auth: AuthContext, allowed: string[] | undefined) {
  if (allowed?.length) requireFeature(auth.tier, 'spaces');
}

/** Loads a space the caller may read (403 when it exists but is not theirs, 404 when unknown or deleted). */
async function readable(db: DbOrTx, auth: AuthContext, id: string, now: Date) {
  const space = await q.findSpace(db, auth.tenantId, id, now);
  if (!space) throw notFound('Context space');
  if (!space.access) throw forbidden();
  return space as q.SpaceWithAccess & { access: NonNullable<q.SpaceWithAccess['access']> };
}

/** Reads by anyone but the owner leave an entry in the owner's chain, in the reading transaction. */
async function auditCrossTenantRead(tx: DbOrTx, space: q.SpaceWithAccess, auth: AuthContext, actor: Actor, what: string, now: Date) {
  if (space.access === 'owner') return;
  await appendAudit(tx, {
    tenantId: space.owner_tenant_id,
    operation: 'space.cross_tenant_read',
    resourceType: 'context_space',
    resourceId: toUrn(space.id),
    actor: actor.keyId,
    requestId: actor.requestId,
    metadata: { reader_tenant_id: auth.tenantId, via: space.access, read: what },
    at: now,
  });
}

export async function createSpace(services: Services, auth: AuthContext, actor: Actor, input: CreateInput) {
  checkTenantGrants(auth, input.allowed_tenant_ids);
  const now = services.clock.now();
  const id = uuidv7();
  const row = await services.db.transaction(async (tx) => {
    const row = await q.insertSpace(tx, id, auth.tenantId, {
      name: input.name,
      description: input.description ?? null,
      allowedAgentIds: input.allowed_agent_ids,
      allowedTenantIds: input.allowed_tenant_ids,
      tags: input.tags,
    }, now);
    await appendAudit(tx, {
      tenantId: auth.tenantId,
      operation: 'space.created',
      resourceType: 'context_space',
      resourceId: toUrn(id),
      actor: actor.keyId,
      requestId: actor.requestId,
      metadata: { name: input.name, allowed_tenant_ids: input.allowed_tenant_ids, allowed_agent_ids: input.allowed_agent_ids },
      at: now,
    });
    await recordMilestone(tx, auth.tenantId, 'first_space', now, { space_id: toUrn(id) });
    return row;
  });
  return toSpaceDto(row, auth.tenantId, 'owner');
}

export async function listSpaces(services: Services, auth: AuthContext, input: { limit: number; offset: number }) {
  const { page, total } = await q.listSpaces(services.db, auth.tenantId, services.clock.now(), input.limit, input.offset);
  return { spaces: page.map((s) => toSpaceDto(s, auth.tenantId, s.access ?? 'owner')), total_count: total };
}

export async function getSpace(services: Services, auth: AuthContext, actor: Actor, id: string) {
  const now = services.clock.now();
  const space = await services.db.transaction(async (tx) => {
    const space = await readable(tx, auth, id, now);
    await auditCrossTenantRead(tx, space, auth, actor, 'space', now);
    return space;
  });
  return toSpaceDto(space, auth.tenantId, space.access);
}

/** Owner only; the row is locked so concurrent updates apply one after the other. */
export async function updateSpace(services: Services, auth: AuthContext, actor: Actor, id: string, input: UpdateInput) {
  checkTenantGrants(auth, input.allowed_tenant_ids);
  const now = services.clock.now();
  const row = await services.db.transaction(async (tx) => {
    const before = await q.findSpace(tx, auth.tenantId, id, now, true);
    if (!before) throw notFound('Context space');
    if (before.access !== 'owner') throw ownerOnly();
    const changed = (Object.keys(input) as (keyof UpdateInput)[]).filter((k) => input[k] !== undefined);
    const after = await q.updateSpace(tx, auth.tenantId, id, {
      name: input.name ?? before.name,
      description: input.description === undefined ? before.description : input.description,
      allowedAgentIds: input.allowed_agent_ids ?? before.allowed_agent_ids,
      allowedTenantIds: input.allowed_tenant_ids ?? before.allowed_tenant_ids,
      tags: input.tags ?? before.tags,
    }, now);
    await appendAudit(tx, {
      tenantId: auth.tenantId,
      operation: 'space.updated',
      resourceType: 'context_space',
      resourceId: toUrn(id),
      actor: actor.keyId,
      requestId: actor.requestId,
      metadata: {
        changed,
        before: Object.fromEntries(changed.map((k) => [k, before[k]])),
        after: Object.fromEntries(changed.map((k) => [k, after[k]])),
      },
      at: now,
    });
    return after;
  });
  return toSpaceDto(row, auth.tenantId, 'owner');
}

/** Soft delete: the space disappears from every read; its memories stay where they are. */
export async function deleteSpace(services: Services, auth: AuthContext, actor: Actor, id: string) {
  const now = services.clock.now();
  await services.db.transaction(async (tx) => {
    const space = await q.findSpace(tx, auth.tenantId, id, now, true);
    if (!space) throw notFound('Context space');
    if (space.access !== 'owner') throw ownerOnly();
    await q.softDeleteSpace(tx, auth.tenantId, id, now);
    await appendAudit(tx, {
      tenantId: auth.tenantId,
      operation: 'space.deleted',
      resourceType: 'context_space',
      resourceId: toUrn(id),
      actor: actor.keyId,
      requestId: actor.requestId,
      metadata: { name: space.name, memory_count: Number(space.memory_count ?? 0) },
      at: now,
    });
  });
}

/** The owner's live memories in the space; with `q`, ranked by cosine similarity (embedded before the transaction). */
export async function spaceMemories(services: Services, auth: AuthContext, actor: Actor, id: string, input: MemoriesInput) {
  const vector = input.q ? vectorLiteral((await embedAll(services.embedder, [input.q]))[0]) : undefined;
  const now = services.clock.now();
  const { page, total } = await services.db.transaction(async (tx) => {
    const space = await readable(tx, auth, id, now);
    const filter = { tags: input.tags, agentId: input.agent_id, vector };
    const result = await q.spaceMemories(tx, space.owner_tenant_id, id, now, filter, input.limit, input.offset);
    // Last, so the owner's chain head is locked only for the instant before commit.
    await auditCrossTenantRead(tx, space, auth, actor, 'memories', now);
    return result;
  });
  const memories = page.map((r) => {
    const dto = toMemoryDto(r);
    if (r.similarity === undefined) return dto;
    const similarity = Math.min(1, Math.max(0, Number(r.similarity)));
    return { ...dto, score: similarity, similarity };
  });
  return {
    memories,
    total_count: total,
    filters: { space_id: toUrn(id), q: input.q ?? null, tags: input.tags ?? null, agent_id: input.agent_id ?? null },
  };
}
