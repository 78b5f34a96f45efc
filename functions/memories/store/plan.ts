import { minTrust, trustOf } from '../../../shared/memory/provenance';
import { type Mention, mentionCandidates, mentionEvents, MENTION_MAX_LINKS } from '../../../shared/memory/entities';
import type { MemoryEventInput } from '../../../shared/memory/events';
import type { TenantCtx } from '../../../shared/platform/contract/context';
import { conflict } from '../../../shared/platform/contract/errors';
import { toUrn } from '../../../shared/platform/contract/ids';
import { tiers } from '../../../shared/platform/contract/tiers';
import type { Work } from '../../../shared/platform/data/unit-of-work';
import { quotaExhausted } from '../../../shared/platform/data/usage';
import * as q from '../queries';
import type { Prepared, StoreOutcome } from './prepare';
import type { Group } from './write';

type Event = Omit<MemoryEventInput, 'at' | 'actor' | 'requestId'>;
export const AUTO_LINK_MAX = 3;
/** Neighbours read beyond AUTO_LINK_MAX before the probe, for duplicates it may find superseded (lww keeps one current). */
export const LINK_SPARE = 1;

export interface Plan {
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
export function planStores(
  work: Work<TenantCtx>,
  groups: Group[],
  probe: q.StoreProbe & { neighbours: Map<number, q.LinkNeighbour[]> },
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
      const id = item.id ?? q.newMemoryId();
      const expiresAt = input.ttl_seconds ? new Date(now.getTime() + input.ttl_seconds * 1000) : input.expires_at ? new Date(input.expires_at) : null;
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
        source: item.source,
        trust: trustOf(item.source.kind),
        occurredAt: input.occurred_at ? new Date(input.occurred_at) : null,
        supersededBy: null as string | null,
        version: 1,
        updatedAt: now,
      };
      const memory = q.newMemoryDto(row, now);
      const plan: Plan = {
        item,
        group: g,
        memory,
        row,
        supersedes: [],
        linkRows: [],
        mentionRows: [],
        events: [],
        superseded: [],
        links: [],
        mentions: [],
        conflict: dups.length > 0,
      };
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
          ...earlier
            .filter((e) => e.row.supersededBy === null)
            .map((e) => ({ id: e.row.id, trust: e.row.trust, similarity: cosine(item.embedding, e.row.embedding) })),
        ]
          .sort((a, b) => b.similarity - a.similarity || (a.id < b.id ? -1 : 1))
          .slice(0, AUTO_LINK_MAX)
          .filter((n) => n.similarity >= threshold);
        for (const l of candidates) {
          plan.linkRows.push({ tenantId: owner, sourceId: id, targetId: l.id, weight: l.similarity });
          plan.events.push({ tenantId: owner, memoryId: id, kind: 'link', metadata: { target_id: toUrn(l.id), relation: 'similar', weight: l.similarity } });
          plan.links.push(l.id);
        }
        // Linked to less trusted memories, it is trusted no more than they are: its create says so.
        row.trust = minTrust(row.trust, ...candidates.map((l) => l.trust));
        memory.trust = row.trust;
      }

      // Knowledge graph tiers: the owner's entities this text names, first mention first.
      const entities = probe.entities.get(g.n);
      if (entities?.length) {
        const order = new Map(mentionCandidates(input.observation).map((c, i) => [c, i]));
        plan.mentions = entities
          .filter((e) => order.has(e.name))
          .sort(
            (a, b) =>
              order.get(a.name)! - order.get(b.name)! ||
              (a.entity_type < b.entity_type ? -1 : a.entity_type > b.entity_type ? 1 : 0) ||
              (a.entity_id < b.entity_id ? -1 : 1),
          )
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
