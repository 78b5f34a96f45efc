import { toUrn } from '../../shared/platform/contract/ids';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { notFound } from '../../shared/platform/contract/errors';
import { mentionsOf } from '../../shared/memory/entities';
import type { MemoryEventKind } from '../../shared/memory/events';
import { STATE_KINDS } from '../../shared/memory/history';
import type { MemoryDto } from '../../shared/memory/rows';
import * as q from './queries';
import { changedFields } from './service';

const iso = (v: Date | string) => new Date(v).toISOString();
const pick = (m: MemoryDto, fields: string[]) => Object.fromEntries(fields.map((f) => [f, m[f as keyof MemoryDto] ?? null]));

/** What an event did, for people: the fields that matter for its kind, its metadata and who did it. */
function detailOf(e: q.EventRow): Record<string, unknown> {
  const meta = e.metadata ?? {};
  const base = { actor: e.actor };
  switch (e.kind) {
    case 'create':
      return {
        ...base,
        ...meta,
        ...(e.after ? pick(e.after, ['observation', 'tags', 'importance', 'context', 'agent_id', 'space_id', 'hash', 'expires_at']) : {}),
      };
    case 'update': {
      const changed = e.before && e.after ? changedFields(e.before, e.after) : [];
      return {
        ...base,
        ...meta,
        changed,
        before: e.before ? pick(e.before, changed) : null,
        after: e.after ? pick(e.after, changed) : null,
      };
    }
    case 'delete':
      return { ...base, ...meta, hash: e.before?.hash ?? null };
    case 'expire':
      return { ...base, ...meta, reason: 'expired', expires_at: e.before?.expires_at ?? null };
    case 'rollback':
      return {
        ...base,
        ...meta,
        result: e.after ? 'restored' : 'removed',
        ...(e.after ? pick(e.after, ['observation', 'tags', 'importance', 'hash']) : {}),
      };
    default:
      // recall (query, mode), link and unlink (target_id, relation, weight)
      return { ...base, ...meta };
  }
}

type CurrentState = 'active' | 'deleted' | 'superseded' | 'expired';

/** From the last state-changing event: gone (deleted, purged, rolled away) or the state it left. */
function currentStateOf(last: q.EventRow | undefined, now: Date): CurrentState {
  if (!last) return 'deleted';
  if (last.kind === 'expire') return 'expired';
  if (last.kind === 'delete' || !last.after) return 'deleted';
  if (last.after.expires_at && new Date(last.after.expires_at) <= now) return 'expired';
  return last.after.superseded_by ? 'superseded' : 'active';
}

/**
 * The life of one memory from the event log: every event oldest first, the versions its
 * snapshots went through, its current links and knowledge graph entities, and its recalls. Only
 * this tenant's events count, so another tenant's memory is 404 even if it exists.
 */
export async function lifecycle(ctx: TenantCtx, input: { memoryId: string }) {
  const { now, tenantId } = ctx;
  const id = input.memoryId;
  const events = await q.eventsOf(ctx.db, tenantId, id);
  if (!events.length) throw notFound('Memory');
  const [links, mentions] = await Promise.all([q.currentLinks(ctx.db, tenantId, id), mentionsOf(ctx.db, tenantId, id)]);

  const stateEvents = events.filter((e) => (STATE_KINDS as readonly string[]).includes(e.kind));
  const snapshots = events.filter((e) => ['create', 'update', 'rollback'].includes(e.kind) && e.after);
  const lastKnown = [...stateEvents].reverse().find((e) => e.after ?? e.before);
  const created = events.find((e) => e.kind === 'create');
  const recalls = events.filter((e) => e.kind === 'recall');

  return {
    memory_id: toUrn(id),
    observation: (lastKnown?.after ?? lastKnown?.before)?.observation ?? '',
    created_at: created?.after?.created_at ?? iso(events[0].at),
    current_state: currentStateOf(stateEvents.at(-1), now),
    events: events.map((e) => ({ timestamp: iso(e.at), event_type: e.kind as MemoryEventKind, detail: detailOf(e) })),
    versions: snapshots.map((e, i) => ({
      version: i + 1,
      observation: e.after!.observation,
      importance: Number(e.after!.importance),
      timestamp: iso(e.at),
    })),
    links: links.map((l) => ({
      edge_id: toUrn(l.id),
      source_id: toUrn(l.source_id),
      target_id: toUrn(l.target_id),
      relation: l.relation,
      weight: Number(l.weight),
      created_at: iso(l.created_at),
    })),
    entities: mentions.map((m) => ({ entity_id: m.entity_id, name: m.name, entity_type: m.entity_type, linked_at: iso(m.linked_at) })),
    recall_count: recalls.length,
    last_recalled_at: recalls.length ? iso(recalls.at(-1)!.at) : null,
  };
}
