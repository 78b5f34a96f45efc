import type { z } from '@hono/zod-openapi';
import { activeGrants, type Grant, grantScope, lockTeamWrite, ownedBy, type TenantScope, writeGrantFor } from '../../shared/memory/access';
import { embedAll } from '../../shared/memory/embeddings';
import { type Mention, mentionCandidates, mentionEvents, MENTION_MAX_LINKS } from '../../shared/memory/entities';
import type { MemoryEventInput } from '../../shared/memory/events';
import type { TenantCtx } from '../../shared/platform/context';
import { digestOf } from '../../shared/platform/crypto';
import { validationFailure } from '../../shared/platform/app';
import { AppError, conflict, errorBody, forbidden, validationError } from '../../shared/platform/errors';
import { eventPayload } from '../../shared/jobs/events';
import { toUrn } from '../../shared/platform/ids';
import { pgError } from '../../shared/platform/pg-errors';
import { errorFields } from '../../shared/platform/error-fields';
import { ANOMALY_THRESHOLDS, crossed, recordAnomaly } from '../../shared/platform/anomalies';
import { hasFeature, requireFeature, type Tier, tiers } from '../../shared/platform/tiers';
import { type Work, write } from '../../shared/platform/unit-of-work';
import { Coalescer } from '../../shared/platform/coalesce';
import { oneConnectionPerRequest, type Services } from '../../shared/platform/services';
import { quotaExhausted } from '../../shared/platform/usage';
import * as q from './queries';
import { type BatchStoreBody, StoreBody } from './schemas';

type StoreInput = z.infer<typeof StoreBody>;
type Event = Omit<MemoryEventInput, 'at' | 'actor' | 'requestId'>;
const AUTO_LINK_MAX = 3;
/** Neighbours read beyond AUTO_LINK_MAX before the probe, for duplicates it may find superseded (lww keeps one current). */
const LINK_SPARE = 1;

/**
 * Whose store a memory goes into, and which of its memories the writer may touch there: duplicates,
 * superseding and auto-links stay inside `scope`. For your own store that is all of it; through a
 * write share or a team grant it is only what that grants (the tag, or the space), so a writer learns
 * nothing of the owner's other memories (no 409 naming them, no links to them, no superseding them).
 */
interface Target {
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
const writeEnded = () => forbidden('Your write access to this context space ended while the memory was being stored; nothing was stored');

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
  let target: Target = { key: `own:${spaceId}`, owner: ctx.tenantId, ownerTier: ctx.tier, spaceId, scope: ownedBy(ctx.tenantId), viaTeam: false, wholeStore: true };
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
  return target;
}

function checkSpace(space: Space | null, target: Target, agentId: string | undefined) {
  if (!space || space.owner_tenant_id !== target.owner) throw validationError('space_id', 'no such context space');
  if (space.allowed_agent_ids.length && !(agentId && space.allowed_agent_ids.includes(agentId))) {
    throw forbidden('agent_id is not in the allowed_agent_ids of this space');
  }
}

/** One memory to store, checked and embedded. */
interface Prepared {
  index: number;
  input: StoreInput;
  target: Target;
  hash: string;
  embedding: number[];
  /** Whom its audit entry and memory events name: the request that asked for it. */
  who: { actor: string | null; requestId: string | null };
}

export type StoreResult = ReturnType<typeof resultOf>;
export type StoreOutcome = { ok: true; result: StoreResult } | { ok: false; error: AppError };

function resultOf(memory: q.MemoryDto, plan: { superseded: string[]; links: string[]; mentions: Mention[]; conflict: boolean }) {
  return {
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

/**
 * Store: check the target and embed first (outside the transaction, so a slow or failing provider
 * holds no locks and leaves nothing half-written), then one unit of work for the quota, the
 * duplicates, the row, superseding, links, events, audit entry, webhook event and milestone.
 */
export async function storeMemory(ctx: TenantCtx, input: StoreInput): Promise<StoreResult> {
  const [outcome] = joinsOthers(ctx) ? [await storeWithOthers(ctx, input)] : await storeMemories(ctx, [input], { throwFailure: true });
  if (!outcome.ok) throw outcome.error;
  return outcome.result;
}

/**
 * Single stores of one tenant that arrive while two of its stores are being written commit together
 * in its next transaction (shared/platform/coalesce.ts): they would queue on the tenant's audit chain
 * head one by one otherwise. Each still gets what storing it alone, in arrival order, would have
 * answered, and its own audit entry and events naming its own key and request. Not on Workers (a
 * request's connection is its own), nor for a request holding an Idempotency-Key (its transaction
 * marks the key) or a store composed into another verb's transaction.
 */
const joinsOthers = (ctx: TenantCtx) => !oneConnectionPerRequest(ctx.services) && !ctx.idempotency && !ctx.work;

interface Queued {
  ctx: TenantCtx;
  item: Prepared;
}
type Settled = { ok: true; result: StoreResult } | { ok: false; error: unknown };

const queues = new WeakMap<Services, Coalescer<Queued, Settled>>();

async function storeWithOthers(ctx: TenantCtx, input: StoreInput): Promise<Settled> {
  const { prepared } = await prepare(ctx, [input], true);
  let queue = queues.get(ctx.services);
  if (!queue) queues.set(ctx.services, (queue = new Coalescer(writeQueued, TOGETHER)));
  return queue.submit(ctx.tenantId, { ctx, item: prepared[0] });
}

/**
 * At most 100 stores a transaction (as a batch request) and two transactions of a tenant at once:
 * while one holds the chain head for its tail and commit, the next runs its probe and inserts (the
 * HNSW insert most of all). Alternately with each store written alone, 16 clients of one tenant, in
 * process, a table of 90,000 memories: 264 and 264 stores/s against 169 and 203; three at once 241
 * and 234; one at a time, fewer than alone.
 */
const TOGETHER = { max: 100, parallel: 2 };

/**
 * One transaction for stores of several requests of one tenant, at the clock's time when it starts
 * (after every one of them began). If it fails, each runs again alone, so that a failure is only
 * that of the store that caused it.
 */
async function writeQueued(queued: Queued[]): Promise<Settled[]> {
  if (queued.length > 1) {
    const first = queued[0].ctx;
    const ctx: TenantCtx = { ...first, now: first.services.clock.now() };
    const written = await writeTogether(ctx, queued.map((q, index) => ({ ...q.item, index }))).catch((err: unknown) => {
      ctx.services.log.warn('stores committed together failed; each runs again alone', { request_id: ctx.requestId, stores: queued.length, ...errorFields(err) });
      return null;
    });
    if (written) return queued.map((_, index) => written.get(index)!);
  }
  const settled: Settled[] = [];
  for (const q of queued) settled.push(await writeTogether(q.ctx, [{ ...q.item, index: 0 }]).then((w) => w.get(0)!, (error: unknown) => ({ ok: false as const, error })));
  return settled;
}

/** One transaction for `prepared`; with `throwFailure`, a store that fails rolls it back (its Idempotency-Key stays unused). */
function writeTogether(ctx: TenantCtx, prepared: Prepared[], throwFailure = false): Promise<Map<number, StoreOutcome>> {
  const locking: Locking = { first: false, separateCommit: false };
  return write(ctx, async (work) => {
    const done = await writeStores(work, prepared, locking);
    for (const o of done.values()) if (!o.ok && throwFailure) throw o.error;
    return done;
  });
}

/** Targets resolved (every permission checked), hashes and embeddings computed, before any transaction. */
async function prepare(ctx: TenantCtx, inputs: StoreInput[], throwFailure: boolean) {
  const outcomes: StoreOutcome[] = new Array(inputs.length);
  const look = targetLookups(ctx);
  const prepared: Prepared[] = [];
  const digest = digestOf(ctx.services);
  const who = { actor: ctx.actor, requestId: ctx.requestId };
  for (const [index, input] of inputs.entries()) {
    try {
      prepared.push({ index, input, target: await resolveTarget(ctx, input, look), hash: await digest(input.observation), embedding: [], who });
    } catch (err) {
      if (!(err instanceof AppError) || throwFailure) throw err;
      outcomes[index] = { ok: false, error: err };
    }
  }
  if (prepared.length) {
    const vectors = await embedAll(ctx.services.embedder, prepared.map((p) => p.input.observation));
    prepared.forEach((p, i) => (p.embedding = vectors[i]));
  }
  return { prepared, outcomes };
}

/**
 * Stores several memories as one request: each gets what storing it alone would have answered (in
 * order, so a later one sees the earlier ones as duplicates, link targets and quota spent), one
 * embedding call serves all, and everything that succeeds commits in one transaction. A memory that
 * fails (403, 409, 429, ...) writes nothing and does not stop the others.
 */
export async function storeMemories(ctx: TenantCtx, inputs: StoreInput[], opts: { throwFailure?: boolean } = {}): Promise<StoreOutcome[]> {
  const { prepared, outcomes } = await prepare(ctx, inputs, opts.throwFailure ?? false);
  if (!prepared.length) return outcomes;
  const written = await writeTogether(ctx, prepared, opts.throwFailure);
  for (const [index, outcome] of written) outcomes[index] = outcome;
  return outcomes;
}

/** POST /v1/memories/batch: each body validated on its own, then stored as storeMemories does. */
export async function storeBatch(ctx: TenantCtx, body: z.infer<typeof BatchStoreBody>) {
  const results: { index: number; status: number; memory?: StoreResult; error?: ReturnType<typeof errorBody> }[] = [];
  const valid: { index: number; input: StoreInput }[] = [];
  for (const [index, raw] of body.memories.entries()) {
    const parsed = StoreBody.safeParse(raw);
    if (parsed.success) valid.push({ index, input: parsed.data });
    else results[index] = failed(ctx, index, validationFailure(parsed.error, `memories[${index}]`));
  }
  const outcomes = await storeMemories(ctx, valid.map((v) => v.input));
  outcomes.forEach((o, i) => {
    const { index } = valid[i];
    results[index] = o.ok ? { index, status: 201, memory: o.result } : failed(ctx, index, o.error);
  });
  const stored = results.filter((r) => r.status === 201).length;
  return { results, stored, failed: results.length - stored };
}

const failed = (ctx: TenantCtx, index: number, error: AppError) => ({ index, status: error.status, error: errorBody(error, ctx.requestId ?? '') });

/** How an attempt of the store's transaction runs, as earlier attempts found. */
interface Locking {
  /** After a concurrent store of the same text made an attempt run again, the next one takes its locks first. */
  first: boolean;
  /** After an attempt whose last statement was to commit with it failed, the next commits on its own. */
  separateCommit: boolean;
}

/** Stores of one target, in request order. */
interface Group {
  n: number;
  target: Target;
  items: Prepared[];
  teams?: string[];
}

function groupsOf(prepared: Prepared[]): Group[] {
  const byKey = new Map<string, Group>();
  for (const p of prepared) {
    let g = byKey.get(p.target.key);
    if (!g) byKey.set(p.target.key, (g = { n: byKey.size, target: p.target, items: [] }));
    g.items.push(p);
  }
  return [...byKey.values()];
}

/**
 * The transaction, in few statements whatever the number of memories:
 * 1. for stores that auto-link, their nearest memories (queries.linkNeighbours: planned per
 *    tenant), then the content locks (`owner:hash`, so two concurrent stores of the same text cannot
 *    both miss each other), the chain head rows, and one read of everything the decisions need:
 *    duplicates (locked), mentioned entities, quota spent, subscribed webhooks, both statements
 *    with BEGIN in one message;
 * 2. the decisions, in request order, in memory;
 * 3. one statement writing the memories, superseding, links, mentions, memory events and intervals,
 *    which fails if a duplicate committed after step 1's snapshot (then all runs again);
 * 4. last, one statement for the per-tenant rows every write queues on (quota, live count, audit
 *    chain head, stream seq, milestone), so they are held from there to commit only; on
 *    node-postgres it carries the COMMIT (`work.lastStatement`), so they are held while it runs and
 *    commits, not also for a round trip to this process and back. Step 3 waits for it and travels
 *    in the same message (db.preparedRowsWithNext): a store is two round trips to PostgreSQL, with
 *    auto-links or without.
 */
async function writeStores(work: Work<TenantCtx>, prepared: Prepared[], locking: Locking): Promise<Map<number, StoreOutcome>> {
  const { ctx, tx } = work;
  const outcomes = new Map<number, StoreOutcome>();
  const groups: Group[] = [];
  for (const g of groupsOf(prepared)) {
    if (g.target.viaTeam) {
      // A team write holds its grant until commit: a member removed or made readonly, or a space
      // that stops granting, stops the write even when the change lands while it embeds.
      const teams = await lockTeamWrite(tx, ctx.tenantId, g.target.spaceId!);
      if (!teams.length) {
        for (const p of g.items) outcomes.set(p.index, { ok: false, error: writeEnded() });
        continue;
      }
      g.teams = teams;
    }
    groups.push(g);
  }
  if (!groups.length) return outcomes;
  const owners = [...new Set(groups.map((g) => g.target.owner))].sort();
  const items = groups.flatMap((g) => g.items);
  // The auto-links' nearest memories need nothing the probe reads: they travel in its message, one
  // more each than a store links to, and the duplicates an lww store supersedes are dropped after.
  const linking = groups.flatMap((g) => g.items.filter((p) => p.input.auto_link).map((p) => ({ p, g })));
  const linkProbe = ({ p, g }: (typeof linking)[number], excludeIds: string[]) => ({
    index: p.index,
    scope: g.target.scope,
    wholeStoreOf: g.target.wholeStore ? g.target.owner : null,
    vector: q.vectorLiteral(p.embedding),
    excludeIds,
  });
  const nearest = q.linkNeighbours(tx, ctx.services.storage, linking.map((l) => linkProbe(l, [])), AUTO_LINK_MAX + LINK_SPARE, ctx.now, { withNext: true });
  nearest.catch(() => undefined); // awaited after the probe; if the probe fails, so did it
  const probe = await q.probeStores(
    tx,
    groups.map((g) => ({
      n: g.n,
      owner: g.target.owner,
      scope: g.target.scope,
      spaceId: g.target.spaceId,
      hashes: [...new Set(g.items.map((p) => p.hash))],
      mentionCandidates: hasFeature(g.target.ownerTier, 'knowledge_graph') ? [...new Set(g.items.flatMap((p) => mentionCandidates(p.input.observation)))] : [],
    })),
    owners,
    { keys: [...new Set(items.map((p) => `${p.target.owner}:${p.hash}`))], first: locking.first },
    ctx.now,
  );
  // Link targets skip the duplicates that an `lww` store at or before this one supersedes (they stop
  // being current before it links). With more of them than the spare, that store asks again.
  const found = await nearest;
  const neighbours = new Map<number, { id: string; similarity: number }[]>();
  const again: q.LinkProbe[] = [];
  for (const l of linking) {
    const superseded = new Set(lwwHashesUpTo(l.g.items, l.g.items.indexOf(l.p)));
    const excludeIds = (probe.duplicates.get(l.g.n) ?? []).filter((d) => superseded.has(d.content_hash)).map((d) => d.id);
    if (excludeIds.length > LINK_SPARE) again.push(linkProbe(l, excludeIds));
    else neighbours.set(l.p.index, (found.get(l.p.index) ?? []).filter((n) => !excludeIds.includes(n.id)).slice(0, AUTO_LINK_MAX));
  }
  for (const [index, list] of await q.linkNeighbours(tx, ctx.services.storage, again, AUTO_LINK_MAX, ctx.now)) neighbours.set(index, list);
  const plans = planStores(work, groups, { ...probe, neighbours }, outcomes);
  if (!plans.length) return outcomes;
  const stamped = plans.flatMap((p) => p.events.map((e) => ({ ...e, at: ctx.now, ...p.item.who })));
  const seen = groups.map((g) => ({
    scope: g.target.scope,
    spaceId: g.target.spaceId,
    hashes: [...new Set(g.items.map((p) => p.hash))],
    ids: (probe.duplicates.get(g.n) ?? []).map((d) => d.id),
  }));
  const written = q.insertStores(tx, seen, plans.map((p) => p.row), plans.flatMap((p) => p.supersedes), plans.flatMap((p) => p.linkRows), plans.flatMap((p) => p.mentionRows), stamped, ctx.now).catch((err: unknown) => {
    // A store of the same text committed while the probe waited for its content lock: decide again.
    if (q.isUnseenDuplicate(err)) locking.first = true;
    // A link target deleted after linkNeighbours read it fails the edge's foreign key: decide again without it.
    const failed = pgError(err);
    if (failed?.code === '23503' && failed.table === 'memory_edges') {
      throw Object.assign(new Error('a link target was deleted concurrently; retrying'), { code: '40001', cause: err });
    }
    throw err;
  });
  written.catch(() => undefined); // awaited below, once the tail it travels with (q.insertStores) has gone
  // When the tail fails, the write's own failure, if it had one, is the cause.
  await commitTail(work, plans, probe, outcomes, locking).catch(async (err: unknown) => {
    await written;
    throw err;
  });
  await written;
  return outcomes;
}

/** The hashes of `lww` stores at or before position `i`: the duplicates they supersede are no link targets for store `i`. */
const lwwHashesUpTo = (items: Prepared[], i: number) => [...new Set(items.slice(0, i + 1).filter((p) => p.input.on_conflict === 'lww').map((p) => p.hash))];

interface Plan {
  item: Prepared;
  group: Group;
  memory: q.MemoryDto;
  row: q.NewMemory & { supersededBy: string | null; version: number; updatedAt: Date };
  supersedes: { tenantId: string; id: string; by: string }[];
  linkRows: { tenantId: string; sourceId: string; targetId: string; weight: number }[];
  mentionRows: { tenantId: string; memoryId: string; entityId: string }[];
  events: Event[];
  superseded: string[];
  links: string[];
  mentions: Mention[];
  conflict: boolean;
}

const cosine = (a: number[], b: number[]) => {
  let dot = 0;
  for (let i = 0; i < a.length; i++) dot += a[i] * b[i];
  return dot; // stored vectors are unit length
};

/**
 * Decides every store in request order, as if each ran alone after the ones before it: the quota
 * left, the duplicates still current (existing ones and earlier stores of this request), the
 * nearest current memories for auto-links, and the mentioned entities.
 */
function planStores(
  work: Work<TenantCtx>,
  groups: Group[],
  probe: q.StoreProbe & { neighbours: Map<number, { id: string; similarity: number }[]> },
  outcomes: Map<number, StoreOutcome>,
): Plan[] {
  const { ctx } = work;
  const { now } = ctx;
  const quotaLeft = new Map<string, number>();
  for (const owner of new Set(groups.map((g) => g.target.owner))) {
    const tier = groups.find((g) => g.target.owner === owner)!.target.ownerTier;
    const limit = tiers[tier].limits.memories;
    quotaLeft.set(owner, limit === null ? Infinity : Math.max(0, limit - (probe.quotaUsed.get(owner) ?? 0)));
  }
  const plans: Plan[] = [];
  for (const g of groups) {
    const { owner, spaceId } = g.target;
    /** Current duplicates per hash: existing rows (with their state) and this request's plans. */
    const current = new Map<string, ({ existing: q.MemoryRow } | { plan: Plan })[]>();
    for (const row of probe.duplicates.get(g.n) ?? []) {
      const list = current.get(row.content_hash) ?? [];
      list.push({ existing: row });
      current.set(row.content_hash, list);
    }
    const supersededHere = new Set<string>();
    const earlier: Plan[] = [];
    for (const item of g.items) {
      const { input, hash } = item;
      if (!(quotaLeft.get(owner)! > 0)) {
        const tier = g.target.ownerTier;
        outcomes.set(item.index, {
          ok: false,
          error: quotaExhausted(ctx.services, tier, 'memories', tiers[tier].limits.memories ?? 0, now, 'Monthly memory quota exhausted'),
        });
        continue;
      }
      const dups = current.get(hash) ?? [];
      const dupId = (d: (typeof dups)[number]) => ('existing' in d ? d.existing.id : d.plan.row.id);
      if (dups.length && input.on_conflict === 'reject') {
        outcomes.set(item.index, { ok: false, error: conflict('An identical memory already exists', { existing_ids: dups.map((d) => toUrn(dupId(d))) }) });
        continue;
      }
      quotaLeft.set(owner, quotaLeft.get(owner)! - 1);
      const id = q.newMemoryId();
      const expiresAt = input.ttl_seconds ? new Date(now.getTime() + input.ttl_seconds * 1000) : null;
      const row = {
        id,
        owner,
        spaceId,
        hash,
        embedding: item.embedding,
        expiresAt,
        observation: input.observation,
        tags: input.tags,
        importance: input.importance,
        context: input.context ?? null,
        agentId: input.agent_id ?? null,
        supersededBy: null as string | null,
        version: 1,
        updatedAt: now,
      };
      const memory = q.newMemoryDto(row, now);
      const plan: Plan = { item, group: g, memory, row, supersedes: [], linkRows: [], mentionRows: [], events: [], superseded: [], links: [], mentions: [], conflict: dups.length > 0 };
      plan.events.push({ tenantId: owner, memoryId: id, kind: 'create', after: memory, embedding: item.embedding });

      // lww: the new memory supersedes its duplicates; each change is an update event.
      if (dups.length && input.on_conflict === 'lww') {
        for (const d of dups) {
          let before: q.MemoryDto;
          let after: q.MemoryDto;
          if ('existing' in d) {
            before = q.toMemoryDto(d.existing);
            after = { ...before, superseded_by: toUrn(id), updated_at: now.toISOString() };
            plan.supersedes.push({ tenantId: owner, id: d.existing.id, by: id });
          } else {
            before = { ...d.plan.memory, superseded_by: null };
            d.plan.row.supersededBy = id;
            d.plan.row.version += 1;
            after = { ...before, superseded_by: toUrn(id), updated_at: now.toISOString() };
          }
          plan.events.push({ tenantId: owner, memoryId: dupId(d), kind: 'update', before, after, metadata: { reason: 'superseded' } });
          plan.superseded.push(dupId(d));
          supersededHere.add(dupId(d));
        }
        current.set(hash, []);
      }
      current.set(hash, [...(current.get(hash) ?? []), { plan }]);

      // Links to up to three close current memories in scope (cosine at least AUTO_LINK_THRESHOLD), each a link event.
      if (input.auto_link) {
        const threshold = ctx.services.config.AUTO_LINK_THRESHOLD;
        const candidates = [
          ...(probe.neighbours.get(item.index) ?? []).filter((n) => !supersededHere.has(n.id)),
          ...earlier.filter((e) => e.row.supersededBy === null).map((e) => ({ id: e.row.id, similarity: cosine(item.embedding, e.row.embedding) })),
        ]
          .sort((a, b) => b.similarity - a.similarity || (a.id < b.id ? -1 : 1))
          .slice(0, AUTO_LINK_MAX)
          .filter((n) => n.similarity >= threshold);
        for (const l of candidates) {
          plan.linkRows.push({ tenantId: owner, sourceId: id, targetId: l.id, weight: l.similarity });
          plan.events.push({ tenantId: owner, memoryId: id, kind: 'link', metadata: { target_id: toUrn(l.id), relation: 'similar', weight: l.similarity } });
          plan.links.push(l.id);
        }
      }

      // Knowledge graph tiers: the owner's entities this text names, first mention first.
      const entities = probe.entities.get(g.n);
      if (entities?.length) {
        const order = new Map(mentionCandidates(input.observation).map((c, i) => [c, i]));
        plan.mentions = entities
          .filter((e) => order.has(e.name))
          .sort((a, b) => order.get(a.name)! - order.get(b.name)! || (a.entity_type < b.entity_type ? -1 : a.entity_type > b.entity_type ? 1 : 0) || (a.entity_id < b.entity_id ? -1 : 1))
          .slice(0, MENTION_MAX_LINKS)
          .map((e) => ({ ...e, entity_id: toUrn(e.entity_id) }));
        for (const m of plan.mentions) plan.mentionRows.push({ tenantId: owner, memoryId: id, entityId: m.entity_id.slice('urn:uuid:'.length) });
        plan.events.push(...mentionEvents(owner, id, plan.mentions));
      }
      earlier.push(plan);
      plans.push(plan);
    }
  }
  return plans;
}

/** Memories a store creates or changes: what the rapid_writes window counts. */
const changes = (p: Plan) => p.events.filter((e) => e.kind === 'create' || e.kind === 'update').length;

/** Step 4 and around it: webhook deliveries, the per-tenant rows, anomaly counts, results. */
async function commitTail(work: Work<TenantCtx>, plans: Plan[], probe: q.StoreProbe, outcomes: Map<number, StoreOutcome>, locking: Locking) {
  const { ctx } = work;
  const at = ctx.now;
  const byOwner = new Map<string, Plan[]>();
  for (const p of plans) byOwner.set(p.group.target.owner, [...(byOwner.get(p.group.target.owner) ?? []), p]);
  const tails = [...byOwner].map(([owner, mine]) => ({
    owner,
    tier: mine[0].group.target.ownerTier,
    audits: mine.map((p) => ({
      tenantId: owner,
      operation: 'memory.create',
      resourceType: 'memory',
      resourceId: p.memory.uuid,
      ...p.item.who,
      at,
      metadata: {
        hash: p.item.hash,
        agent_id: p.memory.agent_id,
        conflict: p.conflict,
        superseded: p.superseded.map(toUrn),
        writer_tenant_id: ctx.tenantId === owner ? undefined : ctx.tenantId,
        ...(p.group.teams ? { via: 'team', team_ids: p.group.teams } : {}),
      },
    })),
    events: mine.map((p) => eventPayload({ tenantId: owner, type: 'memory.created', data: { memory: p.memory }, at })),
    mine,
    rapidWrites: mine.reduce((n, p) => n + changes(p), 0),
  }));
  // The deliveries of the events the tail stores, before it: they take no per-tenant row.
  let jobs = false;
  for (const t of tails) {
    const hooks = probe.webhooks.get(t.owner) ?? [];
    for (const e of t.events) {
      for (const webhookId of hooks) await q.enqueueWebhookDelivery(work.tx, { tenantId: t.owner, webhookId, eventId: e.id, at });
    }
    jobs ||= hooks.length > 0;
  }
  // The tail is the transaction's last statement and commits with it, unless an earlier attempt
  // found it could not (an anomaly to record after it, or a quota that moved).
  const commitsWithTail = !locking.separateCommit;
  const committed = await q.storeTail(work.tx, tails, ctx.now, commitsWithTail ? work.lastStatement : undefined).catch((err: unknown) => {
    if (commitsWithTail) locking.separateCommit = true;
    throw err;
  });
  if (!committed) {
    // Another request spent the quota between our read and now: decide again from the new count.
    throw Object.assign(new Error('memory quota moved while storing; retrying'), { code: '40001' });
  }
  for (const t of tails) {
    // The anomaly window was counted in the statement above (shared/platform/anomalies.ts); a
    // tail that committed with its statement reached no threshold (it would have run again).
    const count = committed.rapidWrites.get(t.owner)!;
    if (crossed('rapid_writes', count, t.rapidWrites)) {
      // Named by the store that reached the threshold, in order, with the count it brought.
      let reached = count - t.rapidWrites;
      const by = t.mine.find((p) => (reached += changes(p)) >= ANOMALY_THRESHOLDS.rapid_writes)!;
      await recordAnomaly(work.system(), { tenantId: t.owner, kind: 'rapid_writes', now: ctx.now, count: reached, requestId: by.item.who.requestId });
    }
  }
  work.noteWritten({ eventTenants: tails.map((t) => t.owner), jobs });
  for (const p of plans) outcomes.set(p.item.index, { ok: true, result: resultOf(p.memory, p) });
}
