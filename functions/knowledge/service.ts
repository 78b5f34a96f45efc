import type { z } from '@hono/zod-openapi';
import { v7 as uuidv7 } from 'uuid';
import { normalizeName, unlinkEvents } from '../../shared/memory/entities';
import { validInput } from '../../shared/platform/http/app';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { notFound } from '../../shared/platform/contract/errors';
import { toUrn } from '../../shared/platform/contract/ids';
import { write } from '../../shared/platform/data/unit-of-work';
import * as q from './queries';
import {
  CreateTripleBody,
  DEFAULT_TYPE,
  type EntityListQuery,
  EntityPaging,
  toConnection,
  toEntityDto,
  toRef,
  toTripleDto,
  type TripleListQuery,
  TriplePaging,
} from './schemas';

const bare = (urn: string) => urn.slice('urn:uuid:'.length);
const normalizedOrUndefined = (value: string | undefined) => (value === undefined ? undefined : normalizeName(value));

/**
 * A triple between two entities found or created by name (names normalized). An entity is its name
 * within the tenant: a triple that names an existing entity reuses it whatever type it gives or
 * omits; a type given for an entity still at the default type (`concept`) sets it. With its optional
 * source memory (the caller's own, live: else 404, whether it never existed or is another tenant's),
 * in one unit of work with its audit entry.
 */
export async function createTriple(ctx: TenantCtx, body: z.input<typeof CreateTripleBody>) {
  // Checked here too, so any caller (an import) gets the route's refusals.
  const input = validInput(CreateTripleBody, body);
  const [subjectName, objectName] = [normalizeName(input.subject), normalizeName(input.object)];
  const typeOf = (given: string | undefined) => normalizeName(given ?? DEFAULT_TYPE);
  // A triple naming the same entity twice: the type given at either end applies to it.
  const wanted =
    subjectName === objectName
      ? [{ name: subjectName, entity_type: typeOf(input.subject_type ?? input.object_type) }]
      : [
          { name: subjectName, entity_type: typeOf(input.subject_type) },
          { name: objectName, entity_type: typeOf(input.object_type) },
        ];
  const tripleId = uuidv7();
  const sourceMemoryId = input.source_memory_id ?? null;
  return write(ctx, async (work) => {
    const { tx } = work;
    const entities = await q.upsertEntities(
      tx,
      ctx.tenantId,
      wanted.map((e) => ({ id: uuidv7(), ...e })),
      DEFAULT_TYPE,
      ctx.now,
    );
    const entity = (name: string) => entities.find((r) => r.name === name)!;
    if (sourceMemoryId && !(await q.lockSourceMemory(tx, ctx.tenantId, sourceMemoryId, ctx.now))) throw notFound('Memory');
    const [s, o] = [entity(subjectName), entity(objectName)];
    const triple = {
      id: tripleId,
      tenantId: ctx.tenantId,
      subjectId: bare(s.entity_id),
      predicate: input.predicate,
      objectId: bare(o.entity_id),
      confidence: input.confidence,
      sourceMemoryId,
      metadata: input.metadata,
    };
    await q.insertTriple(tx, triple, ctx.now);
    await work.audit({
      operation: 'knowledge.triple_created',
      resourceType: 'knowledge_triple',
      resourceId: toUrn(tripleId),
      metadata: {
        subject_id: s.entity_id,
        object_id: o.entity_id,
        entities_created: entities.filter((e) => e.created).map((e) => e.entity_id),
        source_memory_id: sourceMemoryId && toUrn(sourceMemoryId),
      },
    });
    return {
      triple_id: toUrn(tripleId),
      subject: toRef(s),
      predicate: input.predicate,
      object: toRef(o),
      confidence: input.confidence,
      source_memory_id: sourceMemoryId && toUrn(sourceMemoryId),
      metadata: input.metadata,
      created_at: ctx.now.toISOString(),
    };
  });
}

export async function listTriples(ctx: TenantCtx, query: z.infer<typeof TripleListQuery>) {
  const filter = {
    subject: normalizedOrUndefined(query.subject),
    object: normalizedOrUndefined(query.object),
    predicate: query.predicate,
    sourceMemoryId: query.source_memory_id,
  };
  const { page, total } = await q.listTriples(ctx.db, ctx.tenantId, filter, query, ctx.now);
  return { triples: page.map(toTripleDto), ...TriplePaging.meta(total, query, page.length) };
}

export async function getTriple(ctx: TenantCtx, input: { tripleId: string }) {
  const found = await q.tripleOf(ctx.db, ctx.tenantId, input.tripleId, ctx.now);
  if (!found) throw notFound('Triple');
  return toTripleDto(found);
}

/** Deletes one triple; its entities stay, even when no other triple names them. */
export async function deleteTriple(ctx: TenantCtx, input: { tripleId: string }) {
  return write(ctx, async (work) => {
    if (!(await q.deleteTriple(work.tx, ctx.tenantId, input.tripleId))) throw notFound('Triple');
    await work.audit({ operation: 'knowledge.triple_deleted', resourceType: 'knowledge_triple', resourceId: toUrn(input.tripleId) });
    return { deleted: true as const };
  });
}

export async function listEntities(ctx: TenantCtx, query: z.infer<typeof EntityListQuery>) {
  const { page, total } = await q.listEntities(
    ctx.db,
    ctx.tenantId,
    { entityType: normalizedOrUndefined(query.entity_type), prefix: normalizedOrUndefined(query.q) },
    query,
  );
  return { entities: page.map((e) => ({ ...toEntityDto(e), triple_count: Number(e.triple_count) })), ...EntityPaging.meta(total, query, page.length) };
}

export async function getEntity(ctx: TenantCtx, input: { entityId: string; limit: number }) {
  const n = await q.neighbourhood(ctx.db, ctx.tenantId, input.entityId, input.limit, ctx.now);
  if (!n) throw notFound('Entity');
  return {
    entity: toEntityDto(n.entity),
    as_subject: n.asSubject.map(toConnection).map(({ other, ...c }) => ({ ...c, object: other })),
    as_object: n.asObject.map(toConnection).map(({ other, ...c }) => ({ ...c, subject: other })),
    total_connections: n.total,
    mentioned_in: n.mentionedIn,
    mention_count: n.mentionCount,
  };
}

/**
 * Deletes an entity and every triple that names it; the memories that mention it lose that link
 * (an `unlink` event each, so replay shows when). One unit of work, one audit entry.
 */
export async function deleteEntity(ctx: TenantCtx, input: { entityId: string }) {
  return write(ctx, async (work) => {
    const entity = await q.entityOf(work.tx, ctx.tenantId, input.entityId, true);
    if (!entity) throw notFound('Entity');
    const unlinks = await unlinkEvents(work.tx, ctx.tenantId, entity);
    const removed = await q.deleteEntity(work.tx, ctx.tenantId, input.entityId);
    await work.memoryEvents(unlinks);
    await work.audit({
      operation: 'knowledge.entity_deleted',
      resourceType: 'knowledge_entity',
      resourceId: entity.entity_id,
      metadata: { triples_removed: removed, memories_unlinked: unlinks.length },
    });
    return { deleted: true as const, triples_removed: removed };
  });
}
