import type { z } from '@hono/zod-openapi';
import { activeGrants, confinedTo, type Grant, grantScope, narrow, ownedBy, type TenantScope, writeGrantFor } from '../../../shared/memory/access';
import { actingAgent, isConfined } from '../../../shared/platform/contract/scopes';
import { type Source, sharedInto, sourceFor } from '../../../shared/memory/provenance';
import { embedAll } from '../../../shared/memory/embeddings';
import { expiryOf, occurredAtOf } from '../../../shared/memory/event-time';
import type { Mention } from '../../../shared/memory/entities';
import type { TenantCtx } from '../../../shared/platform/contract/context';
import { digestOf } from '../../../shared/platform/contract/crypto';
import { AppError, forbidden, validationError } from '../../../shared/platform/contract/errors';
import { toUrn } from '../../../shared/platform/contract/ids';
import { requireFeature, type Tier } from '../../../shared/platform/contract/tiers';
import * as q from '../queries';
import { govern, type HeldAnswer } from './govern';
import { StoreBody } from '../schemas';

export type StoreInput = z.infer<typeof StoreBody>;

/**
 * Whose store a memory goes into, and which of its memories the writer may touch there: duplicates,
 * superseding and auto-links stay inside `scope`. For your own store that is all of it; through a
 * write share or a team grant it is only what that grants (the tag, or the space), so a writer learns
 * nothing of the owner's other memories (no 409 naming them, no links to them, no superseding them).
 */
export interface Target {
  /** Stores with the same key share owner, space and scope (one group in the statements below). */
  key: string;
  owner: string;
  ownerTier: Tier;
  spaceId: string | null;
  scope: TenantScope;
  /** Granted by team membership (`team_write` space): confirmed again, and locked, in the transaction. */
  viaTeam: boolean;
  /** `scope` is the owner's whole store (the caller's own): auto-links search it with a kept plan. */
  wholeStore: boolean;
}

type Space = NonNullable<Awaited<ReturnType<typeof q.spaceOf>>>;

const readOnlySpace = () =>
  forbidden(
    "You may read this context space but not store into it: another tenant's space takes memories through a write share of it, or from members (owner, admin or member, not readonly) of a team it grants as team:<team_id> when it allows team writes (team_write)",
  );
export const writeEnded = () => forbidden('Your write access to this context space ended while the memory was being stored; nothing was stored');

/** A grant from the space's owner that lets the caller read the space itself (a share of it, or allowed_tenant_ids). */
const seesSpace = (grants: Grant[], space: Space, spaceId: string) =>
  grants.some((g) => g.kind === 'space' && g.spaceId === spaceId && g.ownerTenantId === space.owner_tenant_id);

/** What resolving targets reads, read once per request however many memories it stores. */
function targetLookups(ctx: TenantCtx) {
  let grants: Promise<Grant[]> | undefined;
  const spaces = new Map<string, Promise<Space | null>>();
  const tiersOf = new Map<string, Promise<Tier>>();
  const memo = <T>(map: Map<string, Promise<T>>, key: string, load: () => Promise<T>) => {
    let found = map.get(key);
    if (!found) map.set(key, (found = load()));
    return found;
  };
  return {
    // A store names its target (a space or an owner), so the spaces that list the caller count.
    grants: () => (grants ??= activeGrants(ctx.db, { tenantId: ctx.tenantId, listedSpaces: true })),
    space: (id: string) => memo(spaces, id, () => q.spaceOf(ctx.db, id)),
    tier: (tenantId: string) => memo(tiersOf, tenantId, () => q.tierOf(ctx.db, tenantId)),
  };
}
type Lookups = ReturnType<typeof targetLookups>;

/**
 * Resolves the target and checks every permission before anything is embedded or written. The
 * owner is `owner_tenant_id`, else the owner of `space_id` when the caller may read that space (a
 * team writer needs no owner_tenant_id), else the caller. A space the caller may not read answers
 * exactly as a space that does not exist.
 */
async function resolveTarget(ctx: TenantCtx, input: StoreInput, look: Lookups): Promise<Target> {
  const spaceId = input.space_id ?? null;
  const space = spaceId ? await look.space(spaceId) : null;
  let owner = input.owner_tenant_id ?? ctx.tenantId;
  if (input.owner_tenant_id === undefined && space && space.owner_tenant_id !== ctx.tenantId && seesSpace(await look.grants(), space, spaceId!)) {
    owner = space.owner_tenant_id;
  }
  let target: Target = {
    key: `own:${spaceId}`,
    owner: ctx.tenantId,
    ownerTier: ctx.tier,
    spaceId,
    scope: ownedBy(ctx.tenantId),
    viaTeam: false,
    wholeStore: true,
  };
  if (owner !== ctx.tenantId) {
    const all = await look.grants();
    const grant = writeGrantFor(all, owner, input.tags, spaceId);
    if (!grant && space && space.owner_tenant_id === owner && seesSpace(all, space, spaceId!)) throw readOnlySpace();
    if (!grant) throw forbidden('No write share from that tenant covers these tags or this space');
    const key = `${grant.shareId}:${spaceId}`;
    target = { key, owner, ownerTier: await look.tier(owner), spaceId, scope: grantScope(grant), viaTeam: grant.via === 'space', wholeStore: false };
  }
  // Your own spaces need Pro+; writing into someone's space through their share or team grant needs their tier.
  if (spaceId) requireFeature(target.ownerTier, 'spaces');
  if (spaceId) checkSpace(space, target, input.agent_id);
  // A confined key's duplicates, superseding and auto-links stay among the memories it may see; its
  // stores are a group of their own, so they never share a scope with another key's.
  const key = ctx.auth.restriction;
  if (isConfined(key)) target = { ...target, key: `${target.key}:${ctx.auth.keyId}`, scope: narrow(target.scope, ...confinedTo(key)), wholeStore: false };
  return target;
}

/**
 * A restricted key's store: as its agent (another `agent_id` is 403; none is that agent) and into
 * one of its spaces (another space, or none, is 403).
 */
function pinnedToKey(ctx: TenantCtx, input: StoreInput): StoreInput {
  const key = ctx.auth.restriction;
  if (!key) return input;
  if (key.spaceIds !== null && !(input.space_id && key.spaceIds.includes(input.space_id))) {
    throw forbidden('This restricted key stores only into its spaces: name one of them in space_id');
  }
  return key.agentId === null ? input : { ...input, agent_id: actingAgent(ctx.auth, input.agent_id, 'stores') };
}

function checkSpace(space: Space | null, target: Target, agentId: string | undefined) {
  if (!space || space.owner_tenant_id !== target.owner) throw validationError('space_id', 'no such context space');
  if (space.allowed_agent_ids.length && !(agentId && space.allowed_agent_ids.includes(agentId))) {
    throw forbidden('agent_id is not in the allowed_agent_ids of this space');
  }
}

/** One memory to store, checked and embedded. */
export interface Prepared {
  index: number;
  input: StoreInput;
  target: Target;
  hash: string;
  embedding: number[];
  /** Where it came from, set by the server (shared/memory/provenance.ts). */
  source: Source;
  /** Whom its audit entry and memory events name: the request that asked for it. */
  who: { actor: string | null; requestId: string | null };
  /** An approved held memory keeps the id it was held under (its approval id). */
  id?: string;
  /** Warnings of the memory policies that let it through (docs/governed-memories.md). */
  warnings?: string[];
  /** The caller's governance version its memory policies were judged with; none for an approved hold (never judged again). */
  judgedWith?: number;
}

export type StoreResult = ReturnType<typeof resultOf>;
export type StoreOutcome = { ok: true; result: StoreResult } | { ok: false; error: AppError } | { ok: 'held'; held: HeldAnswer };

export function resultOf(
  memory: q.MemoryDto,
  plan: { superseded: string[]; links: string[]; mentions: Mention[]; conflict: boolean },
  warnings: string[] | undefined = undefined,
) {
  return {
    ...(warnings?.length ? { policy_warnings: warnings } : {}),
    id: memory.uuid,
    uuid: memory.uuid,
    hash: memory.hash,
    created_at: memory.created_at,
    conflict_detected: plan.conflict,
    superseded: plan.superseded.map(toUrn),
    auto_links: plan.links.map(toUrn),
    entities: plan.mentions.map((m) => m.entity_id),
    expires_at: memory.expires_at,
  };
}

/** Where stores come from when not from the key's own request (an import): the source of input `index`. */
export type Origin = (index: number, input: StoreInput) => Source;

/** A held memory being approved: stored under its id with the source it was held with, evaluated no more. */
export interface Approved {
  id: string;
  source: Source;
}

/**
 * Targets resolved (every permission checked), the memory policies applied (docs/governed-memories.md:
 * blocked ones refused, held ones returned in `held`), hashes and embeddings computed, before any transaction.
 */
export async function prepare(ctx: TenantCtx, inputs: StoreInput[], throwFailure: boolean, opts: { origin?: Origin; approved?: Approved } = {}) {
  const { origin, approved } = opts;
  const outcomes: StoreOutcome[] = new Array(inputs.length);
  const look = targetLookups(ctx);
  const checked: Prepared[] = [];
  const digest = digestOf(ctx.services);
  const who = { actor: ctx.actor, requestId: ctx.requestId };
  for (const [index, given] of inputs.entries()) {
    try {
      const input = pinnedToKey(ctx, given);
      const claimed = approved?.source ?? (origin ? origin(index, input) : sourceFor(ctx, input.source, input.agent_id ?? null));
      occurredAtOf(input.occurred_at, ctx.now);
      expiryOf(input, ctx.now);
      const target = await resolveTarget(ctx, input, look);
      // Into another account's store (a write share, a team space): its owner did not write it. An
      // approved hold kept the source it was held with, which already says so.
      const source = approved || target.owner === ctx.tenantId ? claimed : sharedInto(claimed);
      const item: Prepared = { index, input, target, hash: await digest(input.observation), embedding: [], source, who };
      if (approved) item.id = approved.id;
      checked.push(item);
    } catch (err) {
      if (!(err instanceof AppError) || throwFailure) throw err;
      outcomes[index] = { ok: false, error: err };
    }
  }
  const governed = approved ? { store: checked, held: [], warnings: new Map<number, string[]>() } : await govern(ctx, checked, outcomes, throwFailure);
  const prepared = governed.store;
  for (const p of prepared) p.warnings = governed.warnings.get(p.index);
  if (prepared.length) {
    const vectors = await embedAll(
      ctx.services.embedder,
      prepared.map((p) => p.input.observation),
    );
    for (const [i, p] of prepared.entries()) p.embedding = vectors[i];
  }
  return { prepared, outcomes, held: governed.held };
}
