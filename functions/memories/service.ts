import { sql } from 'drizzle-orm';
import type { z } from '@hono/zod-openapi';
import { appendAudit } from '../../shared/audit';
import type { Actor, AuthContext } from '../../shared/context';
import { sha256Hex } from '../../shared/crypto';
import { pgArray, rows } from '../../shared/db';
import { embedAll } from '../../shared/embeddings';
import { AppError, notFound, validationError } from '../../shared/errors';
import { emitEvent } from '../../shared/events';
import { activeGrants, live, parseUrn, type Scope, toUrn } from '../../shared/memory-access';
import { recordMemoryEvents } from '../../shared/memory-events';
import type { Services } from '../../shared/services';
import { requireFeature } from '../../shared/tiers';
import { DAY } from '../../shared/time';
import { adjustLiveMemories } from '../../shared/usage';
import * as q from './queries';
import type { ListQuery, PatchBody } from './schemas';

export function memoryId(raw: string): string {
  const id = parseUrn(raw);
  if (!id) throw validationError('id', 'must be a urn:uuid:<uuid> identifier');
  return id;
}

async function readableWhere(services: Services, auth: AuthContext, scope: Scope, filters: q.Filters) {
  const now = services.clock.now();
  const grants = scope === 'own' ? [] : await activeGrants(services.db, auth.tenantId, now);
  return q.whereReadable(auth.tenantId, grants, scope, now, filters);
}

export async function list(services: Services, auth: AuthContext, query: z.infer<typeof ListQuery>) {
  const spaceId = query.space_id ? parseUrn(query.space_id)! : undefined;
  if (spaceId) requireFeature(auth.tier, 'spaces');
  const where = await readableWhere(services, auth, query.scope, { tags: query.tags, agentId: query.agent_id, spaceId });
  const { page, total } = await q.listPage(services.db, where, query.limit, query.offset);
  return {
    memories: page.map(q.toMemoryDto),
    total,
    total_count: total,
    has_more: query.offset + page.length < total,
    limit: query.limit,
    offset: query.offset,
  };
}

export async function get(services: Services, auth: AuthContext, rawId: string) {
  const id = memoryId(rawId);
  const row = await q.findReadable(services.db, id, await readableWhere(services, auth, 'all', {}));
  if (!row) throw notFound('Memory');
  return q.toMemoryDto(row);
}

/**
 * Patch with optimistic concurrency: the new embedding is computed outside the transaction from the
 * version read first; the update applies only if that version is still current, so of two
 * concurrent patches one wins and the other gets 409 CONFLICT, and no change is silently lost.
 */
export async function patch(services: Services, auth: AuthContext, actor: Actor, rawId: string, body: z.infer<typeof PatchBody>) {
  const id = memoryId(rawId);
  const now = services.clock.now();
  const [current] = await rows<q.MemoryRow>(
    services.db,
    sql`SELECT ${q.COLUMNS} FROM memories m WHERE m.id = ${id}::uuid AND m.tenant_id = ${auth.tenantId} AND ${live(now)}`,
  );
  if (!current) throw notFound('Memory');
  let supersededBy: string | null | undefined;
  if (body.superseded_by !== undefined) {
    supersededBy = body.superseded_by === null ? null : parseUrn(body.superseded_by);
    if (supersededBy === id) throw validationError('superseded_by', 'a memory cannot supersede itself');
    if (supersededBy) {
      const [other] = await rows<{ id: string }>(
        services.db,
        sql`SELECT m.id FROM memories m WHERE m.id = ${supersededBy}::uuid AND m.tenant_id = ${auth.tenantId} AND ${live(now)}`,
      );
      if (!other) throw validationError('superseded_by', 'no such memory');
    }
  }
  const observationChanged = body.observation !== undefined && body.observation !== current.observation;
  const embedding = observationChanged ? (await embedAll(services.embedder, [body.observation!]))[0] : null;
  const hash = observationChanged ? await sha256Hex(body.observation!) : current.content_hash;

  const updated = await services.db.transaction(async (tx) => {
    const sets = [sql`version = m.version + 1`, sql`updated_at = ${now.toISOString()}`];
    if (observationChanged) {
      sets.push(sql`observation = ${body.observation!}`, sql`content_hash = ${hash}`, sql`embedding = ${q.vectorLiteral(embedding!)}::vector`);
    }
    if (body.importance !== undefined) sets.push(sql`importance = ${body.importance}`);
    if (body.tags !== undefined) sets.push(sql`tags = ${pgArray(body.tags)}::text[]`);
    if (supersededBy !== undefined) sets.push(sql`superseded_by = ${supersededBy}::uuid`);
    const [row] = await rows<q.MemoryRow & { embedding_text: string }>(
      tx,
      sql`UPDATE memories m SET ${sql.join(sets, sql`, `)}
          WHERE m.id = ${id}::uuid AND m.tenant_id = ${auth.tenantId} AND m.version = ${current.version}
          RETURNING ${q.COLUMNS}, m.embedding::text AS embedding_text`,
    );
    if (!row) throw new AppError('CONFLICT', 'The memory was changed by another request; read it again and retry');
    const before = q.toMemoryDto(current);
    const after = q.toMemoryDto(row);
    await recordMemoryEvents(tx, [
      {
        tenantId: auth.tenantId,
        memoryId: id,
        kind: 'update',
        at: now,
        actor: actor.keyId,
        requestId: actor.requestId,
        before,
        after,
        embedding: JSON.parse(row.embedding_text) as number[],
      },
    ]);
    const changed = Object.keys(body).filter((k) => body[k as keyof typeof body] !== undefined);
    await appendAudit(tx, { tenantId: auth.tenantId, operation: 'memory.update', resourceType: 'memory', resourceId: after.uuid, actor: actor.keyId, requestId: actor.requestId, metadata: { changed, hash: after.hash, agent_id: after.agent_id }, at: now });
    await emitEvent(tx, { tenantId: auth.tenantId, type: 'memory.updated', data: { memory: after, changed }, at: now });
    return after;
  });
  services.notifyJobs();
  return { uuid: updated.uuid, observation: updated.observation, updated_at: updated.updated_at, memory: updated };
}

/** Permanent delete; links go with it (the event keeps the last state and its links for replay). */
export async function remove(services: Services, auth: AuthContext, actor: Actor, rawId: string) {
  const id = memoryId(rawId);
  const now = services.clock.now();
  await services.db.transaction(async (tx) => {
    const row = await q.lockOwn(tx, auth.tenantId, id, now);
    if (!row) throw notFound('Memory');
    const links = await q.linksOf(tx, id);
    const [{ embedding_text }] = await rows<{ embedding_text: string }>(tx, sql`SELECT embedding::text AS embedding_text FROM memories WHERE id = ${id}::uuid`);
    await tx.execute(sql`DELETE FROM memories WHERE id = ${id}::uuid AND tenant_id = ${auth.tenantId}`);
    // Memories it superseded are current again; each change is an event of its own.
    const revived = await rows<q.MemoryRow>(
      tx,
      sql`UPDATE memories m SET superseded_by = NULL, version = m.version + 1, updated_at = ${now.toISOString()}
          WHERE m.tenant_id = ${auth.tenantId} AND m.superseded_by = ${id}::uuid RETURNING ${q.COLUMNS}`,
    );
    const before = q.toMemoryDto(row);
    await recordMemoryEvents(tx, [
      ...revived.map((r) => {
        const after = q.toMemoryDto(r);
        return { tenantId: auth.tenantId, memoryId: r.id, kind: 'update' as const, at: now, actor: actor.keyId, requestId: actor.requestId, before: { ...after, superseded_by: before.uuid }, after, metadata: { reason: 'superseding memory deleted' } };
      }),
      {
        tenantId: auth.tenantId,
        memoryId: id,
        kind: 'delete',
        at: now,
        actor: actor.keyId,
        requestId: actor.requestId,
        before,
        embedding: JSON.parse(embedding_text) as number[],
        metadata: { links: links.map((l) => ({ source_id: toUrn(l.source_id), target_id: toUrn(l.target_id), relation: l.relation, weight: Number(l.weight) })) },
      },
    ]);
    await appendAudit(tx, { tenantId: auth.tenantId, operation: 'memory.delete', resourceType: 'memory', resourceId: before.uuid, actor: actor.keyId, requestId: actor.requestId, metadata: { hash: before.hash, agent_id: before.agent_id, links_removed: links.length }, at: now });
    await emitEvent(tx, { tenantId: auth.tenantId, type: 'memory.deleted', data: { memory_id: before.uuid, memory: before }, at: now });
    await adjustLiveMemories(tx, auth.tenantId, -1);
  });
  services.notifyJobs();
  return { deleted: true, memory_id: toUrn(id) };
}

export async function contextNow(services: Services, auth: AuthContext) {
  const now = services.clock.now();
  const recent = await rows<q.MemoryRow>(
    services.db,
    sql`SELECT ${q.COLUMNS} FROM memories m WHERE m.tenant_id = ${auth.tenantId} AND ${live(now)} ORDER BY m.created_at DESC, m.id DESC LIMIT 5`,
  );
  const [{ n }] = await rows<{ n: string | number }>(
    services.db,
    sql`SELECT count(*) AS n FROM memories m WHERE m.tenant_id = ${auth.tenantId} AND ${live(now)} AND m.created_at > ${new Date(now.getTime() - DAY).toISOString()}`,
  );
  const [last] = await rows<{ at: Date | string }>(
    services.db,
    sql`SELECT at FROM memory_events WHERE tenant_id = ${auth.tenantId} ORDER BY at DESC, id DESC LIMIT 1`,
  );
  const lastAt = last ? new Date(last.at) : null;
  return {
    server_time_utc: now.toISOString(),
    recent_memories: recent.map(q.toMemoryDto),
    recent_count: Number(n),
    last_session_at: lastAt?.toISOString() ?? null,
    seconds_since_last_session: lastAt ? Math.max(0, Math.round((now.getTime() - lastAt.getTime()) / 1000)) : null,
  };
}
