import { lockTeamWrite } from '../../../shared/memory/access';
import { mentionCandidates } from '../../../shared/memory/entities';
import type { TenantCtx } from '../../../shared/platform/contract/context';
import { pgError } from '../../../shared/platform/data/pg-errors';
import { hasFeature } from '../../../shared/platform/contract/tiers';
import type { Work } from '../../../shared/platform/data/unit-of-work';
import * as q from '../queries';
import { type Prepared, type StoreOutcome, type Target, writeEnded } from './prepare';
import { AUTO_LINK_MAX, LINK_SPARE, planStores } from './plan';
import { commitTail } from './tail';
import { GovernanceChanged } from './govern';

/** How an attempt of the store's transaction runs, as earlier attempts found. */
export interface Locking {
  /** After a concurrent store of the same text made an attempt run again, the next one takes its locks first. */
  first: boolean;
  /** After an attempt whose last statement was to commit with it failed, the next commits on its own. */
  separateCommit: boolean;
}

/** Stores of one target, in request order. */
export interface Group {
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
 *    duplicates (locked), mentioned entities, quota spent, subscribed webhooks, and the caller's
 *    governance version, both statements with BEGIN in one message; stores judged with another
 *    version (a kept copy gone stale, docs/governed-memories.md) write nothing: GovernanceChanged,
 *    and the caller judges them again;
 * 2. the decisions, in request order, in memory;
 * 3. one statement writing the memories, superseding, links, mentions, memory events and intervals,
 *    which fails if a duplicate committed after step 1's snapshot (then all runs again);
 * 4. last, one statement for the per-tenant rows every write queues on (quota, live count, audit
 *    chain head, stream seq, milestone), so they are held from there to commit only; on
 *    node-postgres it carries the COMMIT (`work.lastStatement`), so they are held while it runs and
 *    commits, not also for a round trip to this process and back. Step 3 waits for it and travels
 *    in the same message (db.preparedRowsWithNext): a store is two round trips to PostgreSQL, with
 *    auto-links or without, and, judged with the kept copy of its governance (the common case), no
 *    other before them (docs/architecture.md#memory-policies-on-the-store-path).
 */
export async function writeStores(work: Work<TenantCtx>, prepared: Prepared[], locking: Locking): Promise<Map<number, StoreOutcome>> {
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
  const judged = items.some((p) => p.judgedWith !== undefined);
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
  const nearest = q.linkNeighbours(
    tx,
    ctx.services.storage,
    linking.map((l) => linkProbe(l, [])),
    AUTO_LINK_MAX + LINK_SPARE,
    ctx.now,
    { withNext: true },
  );
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
    { keys: [...new Set(items.map((p) => q.contentKeyOf(p.target.owner, p.hash)))], first: locking.first },
    ctx.now,
    judged ? ctx.tenantId : null,
  );
  // Link targets skip the duplicates that an `lww` store at or before this one supersedes (they stop
  // being current before it links). With more of them than the spare, that store asks again.
  const found = await nearest;
  // Judged with governance that is no longer the caller's (a policy or setting changed since): write
  // nothing; the caller judges them again (govern.ts judgeAgain).
  if (judged && items.some((p) => p.judgedWith !== undefined && p.judgedWith !== probe.governanceVersion)) throw new GovernanceChanged();
  const neighbours = new Map<number, q.LinkNeighbour[]>();
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
    owner: g.target.owner,
    scope: g.target.scope,
    spaceId: g.target.spaceId,
    hashes: [...new Set(g.items.map((p) => p.hash))],
    ids: (probe.duplicates.get(g.n) ?? []).map((d) => d.id),
  }));
  const written = q
    .insertStores(
      tx,
      seen,
      plans.map((p) => p.row),
      plans.flatMap((p) => p.supersedes),
      plans.flatMap((p) => p.linkRows),
      plans.flatMap((p) => p.mentionRows),
      stamped,
      ctx.now,
    )
    .catch((err: unknown) => {
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
const lwwHashesUpTo = (items: Prepared[], i: number) => [
  ...new Set(
    items
      .slice(0, i + 1)
      .filter((p) => p.input.on_conflict === 'lww')
      .map((p) => p.hash),
  ),
];
