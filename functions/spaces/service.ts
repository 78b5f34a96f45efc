import { toUrn } from '../../shared/platform/contract/ids';
import type { z } from '@hono/zod-openapi';
import { v7 as uuidv7 } from 'uuid';
import { embedAll } from '../../shared/memory/embeddings';
import { validInput } from '../../shared/platform/http/app';
import { seenBy } from '../../shared/memory/provenance';
import { toMemoryDto, vectorLiteral } from '../../shared/memory/rows';
import type { TenantCtx } from '../../shared/platform/contract/context';
import type { DbOrTx } from '../../shared/platform/data/db';
import { AppError, forbidden, notFound, validationError } from '../../shared/platform/contract/errors';
import type { PageInput } from '../../shared/platform/data/pagination';
import { isConfined } from '../../shared/platform/contract/scopes';
import { requireFeature } from '../../shared/platform/contract/tiers';
import { type Work, write } from '../../shared/platform/data/unit-of-work';
import * as q from './queries';
import { CreateSpaceBody, ListPaging, MemoriesPaging, type SpaceMemoriesQuery, toSpaceDto, type UpdateSpaceBody } from './schemas';

type CreateInput = z.input<typeof CreateSpaceBody>;
type UpdateInput = z.infer<typeof UpdateSpaceBody>;
type MemoriesInput = z.infer<typeof SpaceMemoriesQuery>;

const noAccess = () => forbidden('You have no access to this context space');
const ownerOnly = () => new AppError('OWNER_ONLY', 'Only the owner of a context space may change or delete it');

/** Granting other tenants is a Pro+ feature; clearing the list is always allowed. */
function checkTenantGrants(ctx: TenantCtx, allowed: string[] | undefined) {
  if (allowed?.length) requireFeature(ctx.tier, 'spaces');
}

/**
 * A space may name `team:<team_id>` only for a team the caller is owner, admin or member of; an
 * entry already on the space (kept by an update) is not checked again. Any other team answers as a
 * team that does not exist.
 */
async function checkTeamGrants(ctx: TenantCtx, tx: DbOrTx, allowed: string[] | undefined, kept: string[] = []) {
  const added = (allowed ?? []).filter((t) => t.startsWith('team:') && !kept.includes(t)).map((t) => t.slice('team:'.length));
  if (!added.length) return;
  const grantable = await q.grantableTeams(tx, ctx.tenantId, added);
  const refused = added.find((t) => !grantable.has(t));
  if (refused) throw validationError('allowed_tenant_ids', `team:${refused} is not a team you belong to as owner, admin or member`);
}

/** The fields that decide who else reads or stores into a space. */
const REACH_FIELDS = ['allowed_tenant_ids', 'allowed_agent_ids', 'team_write'] as const;
type Reach = Pick<CreateInput, (typeof REACH_FIELDS)[number]>;

/**
 * A key confined to an agent or to spaces cannot widen who reaches a space: granting another account
 * (or another agent, or a team's writes) would let the key read, through that grant, memories its own
 * confinement hides from it. Only an unconfined key sets these fields; sending them unchanged is fine.
 */
function checkReach(ctx: TenantCtx, change: Partial<Reach>, current: Reach) {
  if (!isConfined(ctx.auth.restriction)) return;
  const widened = REACH_FIELDS.filter((k) => change[k] !== undefined && JSON.stringify(change[k]) !== JSON.stringify(current[k]));
  if (widened.length) {
    throw forbidden(`A key confined to an agent or to spaces cannot set ${widened.join(', ')}: who else reaches a space is set with an unconfined key`);
  }
}

/** A restricted key confined to some spaces sees no other: they answer as unknown ones. */
const outsideKey = (ctx: TenantCtx, id: string) => {
  const spaceIds = ctx.auth.restriction?.spaceIds;
  return !!spaceIds && !spaceIds.includes(id);
};

/** Loads a space the caller may read (403 when it exists but is not theirs, 404 when unknown or deleted). */
async function readable(ctx: TenantCtx, id: string) {
  if (outsideKey(ctx, id)) throw notFound('Context space');
  const space = await q.findSpace(ctx.db, ctx.tenantId, id, ctx.now);
  if (!space) throw notFound('Context space');
  if (!space.access) throw noAccess();
  return space as q.SpaceWithAccess & { access: NonNullable<q.SpaceWithAccess['access']> };
}

/** Loads a space for a change by its owner, locked so concurrent changes apply one after the other. */
async function ownedForUpdate(ctx: TenantCtx, id: string) {
  if (outsideKey(ctx, id)) throw notFound('Context space');
  const space = await q.findSpace(ctx.db, ctx.tenantId, id, ctx.now, true);
  if (!space) throw notFound('Context space');
  if (space.access !== 'owner') throw ownerOnly();
  return space;
}

/** Reads by anyone but the owner leave an entry in the owner's chain, in the reading transaction. */
async function auditCrossTenantRead(work: Work<TenantCtx>, space: q.SpaceWithAccess, what: string) {
  if (space.access === 'owner') return;
  await work.audit({
    tenantId: space.owner_tenant_id,
    operation: 'space.cross_tenant_read',
    resourceType: 'context_space',
    resourceId: toUrn(space.id),
    metadata: { reader_tenant_id: work.ctx.tenantId, via: space.access, read: what },
  });
}

/** The create body is checked here too, so any caller (an import) gets the route's refusals. */
export async function createSpace(ctx: TenantCtx, body: CreateInput) {
  const input = validInput(CreateSpaceBody, body);
  // A key confined to some spaces would lose sight of the space it made at once.
  if (ctx.auth.restriction?.spaceIds) throw forbidden('This restricted key is confined to its space_ids: it cannot create a space');
  checkReach(ctx, input, { allowed_tenant_ids: [], allowed_agent_ids: [], team_write: false });
  checkTenantGrants(ctx, input.allowed_tenant_ids);
  const id = uuidv7();
  const row = await write(ctx, async (work) => {
    await checkTeamGrants(ctx, work.tx, input.allowed_tenant_ids);
    const row = await q.insertSpace(
      work.tx,
      id,
      ctx.tenantId,
      {
        name: input.name,
        description: input.description ?? null,
        allowedAgentIds: input.allowed_agent_ids,
        allowedTenantIds: input.allowed_tenant_ids,
        tags: input.tags,
        teamWrite: input.team_write,
      },
      ctx.now,
    );
    await work.audit({
      operation: 'space.created',
      resourceType: 'context_space',
      resourceId: toUrn(id),
      metadata: { name: input.name, allowed_tenant_ids: input.allowed_tenant_ids, allowed_agent_ids: input.allowed_agent_ids, team_write: input.team_write },
    });
    await work.milestone('first_space', { space_id: toUrn(id) });
    return row;
  });
  return toSpaceDto(row, ctx.tenantId, 'owner');
}

export async function listSpaces(ctx: TenantCtx, input: PageInput) {
  const { page, total } = await q.listSpaces(ctx.db, ctx.tenantId, ctx.now, input.limit, input.offset, ctx.auth.restriction?.spaceIds ?? null);
  return { spaces: page.map((s) => toSpaceDto(s, ctx.tenantId, s.access ?? 'owner')), ...ListPaging.meta(total, input, page.length) };
}

export async function getSpace(ctx: TenantCtx, input: { spaceId: string }) {
  const space = await write(ctx, async (work) => {
    const space = await readable(work.ctx, input.spaceId);
    await auditCrossTenantRead(work, space, 'space');
    return space;
  });
  return toSpaceDto(space, ctx.tenantId, space.access);
}

/** Owner only; the row is locked so concurrent updates apply one after the other. */
export async function updateSpace(ctx: TenantCtx, input: { spaceId: string } & UpdateInput) {
  const { spaceId, ...change } = input;
  checkTenantGrants(ctx, change.allowed_tenant_ids);
  const row = await write(ctx, async (work) => {
    const before = await ownedForUpdate(work.ctx, spaceId);
    checkReach(ctx, change, {
      allowed_tenant_ids: before.allowed_tenant_ids ?? [],
      allowed_agent_ids: before.allowed_agent_ids ?? [],
      team_write: before.team_write ?? false,
    });
    await checkTeamGrants(ctx, work.tx, change.allowed_tenant_ids, before.allowed_tenant_ids);
    const changed = (Object.keys(change) as (keyof UpdateInput)[]).filter((k) => change[k] !== undefined);
    const after = await q.updateSpace(
      work.tx,
      ctx.tenantId,
      spaceId,
      {
        name: change.name ?? before.name,
        description: change.description === undefined ? before.description : change.description,
        allowedAgentIds: change.allowed_agent_ids ?? before.allowed_agent_ids,
        allowedTenantIds: change.allowed_tenant_ids ?? before.allowed_tenant_ids,
        tags: change.tags ?? before.tags,
        teamWrite: change.team_write ?? before.team_write,
      },
      ctx.now,
    );
    await work.audit({
      operation: 'space.updated',
      resourceType: 'context_space',
      resourceId: toUrn(spaceId),
      metadata: {
        changed,
        before: Object.fromEntries(changed.map((k) => [k, before[k]])),
        after: Object.fromEntries(changed.map((k) => [k, after[k]])),
      },
    });
    return after;
  });
  return toSpaceDto(row, ctx.tenantId, 'owner');
}

/** Soft delete: the space disappears from every read; its memories stay where they are. */
export async function deleteSpace(ctx: TenantCtx, input: { spaceId: string }) {
  await write(ctx, async (work) => {
    const space = await ownedForUpdate(work.ctx, input.spaceId);
    await q.softDeleteSpace(work.tx, ctx.tenantId, input.spaceId, ctx.now);
    await work.audit({
      operation: 'space.deleted',
      resourceType: 'context_space',
      resourceId: toUrn(input.spaceId),
      metadata: { name: space.name, memory_count: Number(space.memory_count ?? 0) },
    });
  });
}

/** The owner's live memories in the space; with `q`, ranked by cosine similarity (embedded before the transaction). */
export async function spaceMemories(ctx: TenantCtx, input: { spaceId: string } & MemoriesInput) {
  const { spaceId } = input;
  const vector = input.q ? vectorLiteral((await embedAll(ctx.services.embedder, [input.q]))[0]) : undefined;
  const { page, total } = await write(ctx, async (work) => {
    const space = await readable(work.ctx, spaceId);
    const filter = { tags: input.tags, agentId: input.agent_id, vector, key: ctx.auth.restriction };
    const result = await q.spaceMemories(work.tx, ctx.services.storage, space.owner_tenant_id, spaceId, ctx.now, filter, input.limit, input.offset);
    // Last, so the owner's chain head is locked only for the instant before commit.
    await auditCrossTenantRead(work, space, 'memories');
    return result;
  });
  const memories = page.map((r) => {
    const dto = toMemoryDto(seenBy(ctx.tenantId, r));
    if (r.similarity === undefined) return dto;
    const similarity = Math.min(1, Math.max(0, Number(r.similarity)));
    return { ...dto, score: similarity, similarity };
  });
  return {
    memories,
    ...MemoriesPaging.meta(total, input, page.length),
    filters: { space_id: toUrn(spaceId), q: input.q ?? null, tags: input.tags ?? null, agent_id: input.agent_id ?? null },
  };
}
