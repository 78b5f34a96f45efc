import type { z } from '@hono/zod-openapi';
import { v7 as uuidv7 } from 'uuid';
import { activeGrants, type Grant, grantScope, lockTeamWrite, ownedBy, type TenantScope, writeGrantFor } from '../../shared/memory/access';
import { embedAll } from '../../shared/memory/embeddings';
import { linkMentions, mentionEvents } from '../../shared/memory/entities';
import type { MemoryEventInput } from '../../shared/memory/events';
import type { TenantCtx } from '../../shared/platform/context';
import { sha256Hex } from '../../shared/platform/crypto';
import { conflict, forbidden, validationError } from '../../shared/platform/errors';
import { toUrn } from '../../shared/platform/ids';
import { hasFeature, requireFeature, type Tier } from '../../shared/platform/tiers';
import { type Work, write } from '../../shared/platform/unit-of-work';
import { adjustLiveMemories, spendQuota } from '../../shared/platform/usage';
import * as q from './queries';
import type { StoreBody } from './schemas';

type StoreInput = z.infer<typeof StoreBody>;
type Event = Omit<MemoryEventInput, 'at' | 'actor' | 'requestId'>;
const AUTO_LINK_MAX = 3;

/**
 * Whose store a memory goes into, and which of its memories the writer may touch there: duplicates,
 * superseding and auto-links stay inside `scope`. For your own store that is all of it; through a
 * write share or a team grant it is only what that grants (the tag, or the space), so a writer learns
 * nothing of the owner's other memories (no 409 naming them, no links to them, no superseding them).
 */
interface Target {
  owner: string;
  ownerTier: Tier;
  spaceId: string | null;
  scope: TenantScope;
  /** Granted by team membership (`team_write` space): confirmed again, and locked, in the transaction. */
  viaTeam: boolean;
}

type Space = NonNullable<Awaited<ReturnType<typeof q.spaceOf>>>;

const readOnlySpace = () =>
  forbidden(
    "You may read this context space but not store into it: another tenant's space takes memories through a write share of it, or from members (owner, admin or member, not readonly) of a team it grants as team:<team_id> when it allows team writes (team_write)",
  );
const writeEnded = () => forbidden('Your write access to this context space ended while the memory was being stored; nothing was stored');

/** A grant from the space's owner that lets the caller read the space itself (a share of it, or allowed_tenant_ids). */
const seesSpace = (grants: Grant[], space: Space, spaceId: string) =>
  grants.some((g) => g.kind === 'space' && g.spaceId === spaceId && g.ownerTenantId === space.owner_tenant_id);

/**
 * Resolves the target and checks every permission before anything is embedded or written. The
 * owner is `owner_tenant_id`, else the owner of `space_id` when the caller may read that space (a
 * team writer needs no owner_tenant_id), else the caller. A space the caller may not read answers
 * exactly as a space that does not exist.
 */
async function resolveTarget(ctx: TenantCtx, input: StoreInput): Promise<Target> {
  const spaceId = input.space_id ?? null;
  const space = spaceId ? await q.spaceOf(ctx.db, spaceId) : null;
  let grants: Grant[] | undefined;
  const grantsOf = async () => (grants ??= await activeGrants(ctx.db, ctx.tenantId, ctx.now));
  let owner = input.owner_tenant_id ?? ctx.tenantId;
  if (input.owner_tenant_id === undefined && space && space.owner_tenant_id !== ctx.tenantId && seesSpace(await grantsOf(), space, spaceId!)) {
    owner = space.owner_tenant_id;
  }
  let target: Target = { owner: ctx.tenantId, ownerTier: ctx.tier, spaceId, scope: ownedBy(ctx.tenantId), viaTeam: false };
  if (owner !== ctx.tenantId) {
    const all = await grantsOf();
    const grant = writeGrantFor(all, owner, input.tags, spaceId);
    if (!grant && space && space.owner_tenant_id === owner && seesSpace(all, space, spaceId!)) throw readOnlySpace();
    if (!grant) throw forbidden('No write share from that tenant covers these tags or this space');
    target = { owner, ownerTier: await q.tierOf(ctx.db, owner), spaceId, scope: grantScope(grant), viaTeam: grant.via === 'space' };
  }
  // Your own spaces need Pro+; writing into someone's space through their share or team grant needs their tier.
  if (spaceId) requireFeature(target.ownerTier, 'spaces');
  if (spaceId) checkSpace(space, target, input.agent_id);
  return target;
}

function checkSpace(space: Space | null, target: Target, agentId: string | undefined) {
  if (!space || space.owner_tenant_id !== target.owner) throw validationError('space_id', 'no such context space');
  if (space.allowed_agent_ids.length && !(agentId && space.allowed_agent_ids.includes(agentId))) {
    throw forbidden('agent_id is not in the allowed_agent_ids of this space');
  }
}

/**
 * A team write holds its grant until commit (`lockTeamWrite`): a member removed or made readonly,
 * or a space that stops granting, stops the write even when the change lands while it embeds.
 */
async function confirmTeamWrite(work: Work<TenantCtx>, target: Target): Promise<string[] | undefined> {
  if (!target.viaTeam) return undefined;
  const teams = await lockTeamWrite(work.tx, work.ctx.tenantId, target.spaceId!);
  if (!teams.length) throw writeEnded();
  return teams;
}

/** Older live copies of the same content in the same space: 409 for `reject`, else returned (locked). */
async function findDuplicates(work: Work<TenantCtx>, target: Target, input: StoreInput, hash: string) {
  // Serializes stores of the same content, so two concurrent duplicates cannot both miss each other.
  await work.lock(`${target.owner}:${hash}`);
  const duplicates = await q.lockDuplicates(work.tx, target.scope, hash, target.spaceId, work.ctx.now);
  if (duplicates.length && input.on_conflict === 'reject') {
    throw conflict('An identical memory already exists', { existing_ids: duplicates.map((d) => toUrn(d.id)) });
  }
  return duplicates.map((d) => d.id);
}

/** `lww`: the new memory supersedes its duplicates; each change is an update event. */
async function supersedeOlder(work: Work<TenantCtx>, owner: string, duplicates: string[], id: string): Promise<{ ids: string[]; events: Event[] }> {
  const older = await q.supersede(work.tx, owner, duplicates, id, work.ctx.now);
  const events = older.map((o) => {
    const after = q.toMemoryDto(o);
    return { tenantId: owner, memoryId: o.id, kind: 'update' as const, before: { ...after, superseded_by: null }, after, metadata: { reason: 'superseded' } };
  });
  return { ids: older.map((o) => o.id), events };
}

/** Links to up to three close memories in scope (cosine at least AUTO_LINK_THRESHOLD), each a link event. */
async function autoLink(work: Work<TenantCtx>, target: Target, id: string, embedding: number[]): Promise<{ ids: string[]; events: Event[] }> {
  const { now, services } = work.ctx;
  const near = await q.nearestInScope(work.tx, target.scope, id, embedding, AUTO_LINK_MAX, now);
  const linked = near.filter((n) => Number(n.similarity) >= services.config.AUTO_LINK_THRESHOLD);
  await q.insertLinks(work.tx, target.owner, id, linked, now);
  const events = linked.map((l) => ({
    tenantId: target.owner,
    memoryId: id,
    kind: 'link' as const,
    metadata: { target_id: toUrn(l.id), relation: 'similar', weight: Number(l.similarity) },
  }));
  return { ids: linked.map((l) => l.id), events };
}

/**
 * Store: check the target and embed first (outside the transaction, so a slow or failing provider
 * holds no locks and leaves nothing half-written), then one unit of work for the quota, the
 * duplicates, the row, superseding, links, events, audit entry, webhook event and milestone.
 */
export async function storeMemory(ctx: TenantCtx, input: StoreInput) {
  const target = await resolveTarget(ctx, input);
  const hash = await sha256Hex(input.observation);
  const [embedding] = await embedAll(ctx.services.embedder, [input.observation]);
  const { owner } = target;
  const result = await write(ctx, async (work) => {
    const teams = await confirmTeamWrite(work, target);
    await spendQuota(ctx, work.tx, 'memories', { tenantId: owner, tier: target.ownerTier }, 'Monthly memory quota exhausted');
    const duplicates = await findDuplicates(work, target, input, hash);
    const id = uuidv7();
    const expiresAt = input.ttl_seconds ? new Date(ctx.now.getTime() + input.ttl_seconds * 1000) : null;
    const fields = { observation: input.observation, tags: input.tags, importance: input.importance, context: input.context ?? null, agentId: input.agent_id ?? null };
    const memory = q.toMemoryDto(await q.insertMemory(work.tx, { id, owner, spaceId: target.spaceId, hash, embedding, expiresAt, ...fields }, ctx.now));
    const superseded = duplicates.length && input.on_conflict === 'lww' ? await supersedeOlder(work, owner, duplicates, id) : { ids: [], events: [] };
    const links = input.auto_link ? await autoLink(work, target, id, embedding) : { ids: [], events: [] };
    // Knowledge graph tiers: the owner's entities this text names (one indexed statement).
    const mentions = hasFeature(target.ownerTier, 'knowledge_graph') ? await linkMentions(work.tx, owner, id, input.observation, ctx.now) : [];
    await work.memoryEvents([
      { tenantId: owner, memoryId: id, kind: 'create', after: memory, embedding },
      ...superseded.events,
      ...links.events,
      ...mentionEvents(owner, id, mentions),
    ]);
    const writer = ctx.tenantId === owner ? undefined : ctx.tenantId;
    await work.audit({
      tenantId: owner,
      operation: 'memory.create',
      resourceType: 'memory',
      resourceId: memory.uuid,
      metadata: {
        hash,
        agent_id: memory.agent_id,
        conflict: duplicates.length > 0,
        superseded: superseded.ids.map(toUrn),
        writer_tenant_id: writer,
        ...(teams ? { via: 'team', team_ids: teams } : {}),
      },
    });
    await work.event('memory.created', { memory }, { tenantId: owner });
    await adjustLiveMemories(work.tx, owner, 1);
    await work.milestone('first_memory', { memory_id: memory.uuid }, { tenantId: owner });
    return { memory, superseded: superseded.ids, links: links.ids, mentions, conflict: duplicates.length > 0 };
  });
  const { memory } = result;
  return {
    id: memory.uuid,
    uuid: memory.uuid,
    hash,
    created_at: memory.created_at,
    conflict_detected: result.conflict,
    superseded: result.superseded.map(toUrn),
    auto_links: result.links.map(toUrn),
    entities: result.mentions.map((m) => m.entity_id),
    expires_at: memory.expires_at,
  };
}
