import { sql } from 'drizzle-orm';
import { v7 as uuidv7 } from 'uuid';
import type { z } from '@hono/zod-openapi';
import { appendAudit } from '../../shared/audit';
import type { Actor, AuthContext } from '../../shared/context';
import { sha256Hex } from '../../shared/crypto';
import { type DbOrTx, pgArray, rows } from '../../shared/db';
import { embedAll } from '../../shared/embeddings';
import { AppError, validationError } from '../../shared/errors';
import { emitEvent } from '../../shared/events';
import { activeGrants, live, parseUrn, toUrn, writeGrantFor } from '../../shared/memory-access';
import { recordMemoryEvents } from '../../shared/memory-events';
import { recordMilestone } from '../../shared/milestones';
import type { Services } from '../../shared/services';
import { requireFeature, type Tier, tiers } from '../../shared/tiers';
import { adjustLiveMemories, consumeQuotaInTx, usageSnapshotForError } from '../../shared/usage';
import { nearestMemories } from '../../shared/vector-search';
import { COLUMNS, type MemoryRow, toMemoryDto, vectorLiteral } from './queries';
import type { StoreBody } from './schemas';

type StoreInput = z.infer<typeof StoreBody>;
const AUTO_LINK_MAX = 3;

interface Target {
  owner: string;
  ownerTier: Tier;
  spaceId: string | null;
}

/** Whose store the memory goes into, and whether the space may be used; all checks before any write. */
async function resolveTarget(services: Services, auth: AuthContext, input: StoreInput): Promise<Target> {
  const now = services.clock.now();
  const spaceId = input.space_id ? parseUrn(input.space_id) : null;
  const foreign = Boolean(input.owner_tenant_id && input.owner_tenant_id !== auth.tenantId);
  // Your own spaces need Pro+; writing into someone's space through their share needs their tier.
  if (spaceId && !foreign) requireFeature(auth.tier, 'spaces');
  let owner = auth.tenantId;
  let ownerTier = auth.tier;
  if (foreign && input.owner_tenant_id) {
    const grants = await activeGrants(services.db, auth.tenantId, now);
    if (!writeGrantFor(grants, input.owner_tenant_id, input.tags, spaceId)) {
      throw new AppError('FORBIDDEN', 'No write share from that tenant covers these tags or this space');
    }
    owner = input.owner_tenant_id;
    const [t] = await rows<{ tier: Tier }>(services.db, sql`SELECT tier FROM tenants WHERE id = ${owner}`);
    ownerTier = t.tier;
    if (spaceId) requireFeature(ownerTier, 'spaces');
  }
  if (spaceId) {
    const [space] = await rows<{ owner_tenant_id: string; allowed_agent_ids: string[] }>(
      services.db,
      sql`SELECT owner_tenant_id, allowed_agent_ids FROM context_spaces WHERE id = ${spaceId}::uuid AND deleted_at IS NULL`,
    );
    if (!space || space.owner_tenant_id !== owner) throw validationError('space_id', 'no such context space');
    if (space.allowed_agent_ids.length && !(input.agent_id && space.allowed_agent_ids.includes(input.agent_id))) {
      throw new AppError('FORBIDDEN', 'agent_id is not in the allowed_agent_ids of this space');
    }
  }
  return { owner, ownerTier, spaceId };
}

async function autoLink(tx: DbOrTx, owner: string, id: string, embedding: number[], threshold: number, now: Date) {
  const near = await rows<{ id: string; similarity: number }>(
    tx,
    nearestMemories(sql`m.id`, sql`m.tenant_id = ${owner} AND m.id <> ${id}::uuid AND m.superseded_by IS NULL AND ${live(now)}`, vectorLiteral(embedding), { limit: AUTO_LINK_MAX }),
  );
  const linked = near.filter((n) => Number(n.similarity) >= threshold);
  for (const n of linked) {
    await tx.execute(sql`
      INSERT INTO memory_edges (id, tenant_id, source_id, target_id, relation, weight, created_at)
      VALUES (${uuidv7()}::uuid, ${owner}, ${id}::uuid, ${n.id}::uuid, 'similar', ${Number(n.similarity)}, ${now.toISOString()})
      ON CONFLICT DO NOTHING`);
  }
  return linked;
}

/**
 * Store: embed first (outside the transaction, so a slow or failing provider holds no locks and
 * leaves nothing half-written), then one transaction for the memory, its duplicates, links,
 * quota, event, audit entry, webhook event and milestone.
 */
export async function storeMemory(services: Services, auth: AuthContext, actor: Actor, input: StoreInput) {
  const target = await resolveTarget(services, auth, input);
  const hash = await sha256Hex(input.observation);
  const [embedding] = await embedAll(services.embedder, [input.observation]);
  const now = services.clock.now();
  const id = uuidv7();
  const expiresAt = input.ttl_seconds ? new Date(now.getTime() + input.ttl_seconds * 1000) : null;
  const { owner, spaceId } = target;

  const result = await services.db.transaction(async (tx) => {
    // Serializes stores of the same content, so two concurrent duplicates cannot both miss each other.
    await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${`${owner}:${hash}`}, 0))`);
    if (!(await consumeQuotaInTx(tx, owner, target.ownerTier, 'memories', now))) {
      throw new AppError('RATE_LIMITED', 'Monthly memory quota exhausted', {
        ...usageSnapshotForError(services, target.ownerTier, 'memories', tiers[target.ownerTier].limits.memories ?? 0, now),
      });
    }
    const duplicates = await rows<{ id: string }>(
      tx,
      sql`SELECT m.id FROM memories m
          WHERE m.tenant_id = ${owner} AND m.content_hash = ${hash} AND m.space_id IS NOT DISTINCT FROM ${spaceId}::uuid
            AND m.superseded_by IS NULL AND ${live(now)}
          FOR UPDATE`,
    );
    if (duplicates.length && input.on_conflict === 'reject') {
      throw new AppError('CONFLICT', 'An identical memory already exists', { existing_ids: duplicates.map((d) => toUrn(d.id)) });
    }
    const [row] = await rows<MemoryRow>(
      tx,
      sql`INSERT INTO memories AS m (id, tenant_id, observation, tags, importance, confidence, context, agent_id, space_id,
                                     content_hash, embedding, expires_at, created_at, updated_at)
          VALUES (${id}::uuid, ${owner}, ${input.observation}, ${pgArray(input.tags)}::text[],
                  ${input.importance}, 1, ${input.context ?? null}, ${input.agent_id ?? null}, ${spaceId}::uuid, ${hash},
                  ${vectorLiteral(embedding)}::vector, ${expiresAt?.toISOString() ?? null}, ${now.toISOString()}, ${now.toISOString()})
          RETURNING ${COLUMNS}`,
    );
    const memory = toMemoryDto(row);
    const events: Parameters<typeof recordMemoryEvents>[1] = [
      { tenantId: owner, memoryId: id, kind: 'create', at: now, actor: actor.keyId, requestId: actor.requestId, after: memory, embedding },
    ];
    let superseded: string[] = [];
    if (duplicates.length && input.on_conflict === 'lww') {
      const older = await rows<MemoryRow>(
        tx,
        sql`UPDATE memories m SET superseded_by = ${id}::uuid, version = m.version + 1, updated_at = ${now.toISOString()}
            WHERE m.id IN (${sql.join(duplicates.map((d) => sql`${d.id}::uuid`), sql`, `)}) RETURNING ${COLUMNS}`,
      );
      superseded = older.map((o) => o.id);
      for (const o of older) {
        const after = toMemoryDto(o);
        events.push({ tenantId: owner, memoryId: o.id, kind: 'update', at: now, actor: actor.keyId, requestId: actor.requestId, before: { ...after, superseded_by: null }, after, metadata: { reason: 'superseded' } });
      }
    }
    const links = input.auto_link ? await autoLink(tx, owner, id, embedding, services.config.AUTO_LINK_THRESHOLD, now) : [];
    for (const l of links) {
      events.push({ tenantId: owner, memoryId: id, kind: 'link', at: now, actor: actor.keyId, requestId: actor.requestId, metadata: { target_id: toUrn(l.id), relation: 'similar', weight: Number(l.similarity) } });
    }
    await recordMemoryEvents(tx, events);
    await appendAudit(tx, {
      tenantId: owner,
      operation: 'memory.create',
      resourceType: 'memory',
      resourceId: memory.uuid,
      actor: actor.keyId,
      requestId: actor.requestId,
      metadata: { hash, agent_id: memory.agent_id, conflict: duplicates.length > 0, superseded: superseded.map(toUrn), writer_tenant_id: auth.tenantId === owner ? undefined : auth.tenantId },
      at: now,
    });
    await emitEvent(tx, { tenantId: owner, type: 'memory.created', data: { memory }, at: now });
    await adjustLiveMemories(tx, owner, 1);
    await recordMilestone(tx, owner, 'first_memory', now, { memory_id: memory.uuid });
    return { memory, superseded, links, conflict: duplicates.length > 0 };
  });
  services.notifyJobs();
  return {
    id: result.memory.uuid,
    uuid: result.memory.uuid,
    hash,
    created_at: result.memory.created_at,
    conflict_detected: result.conflict,
    superseded: result.superseded.map(toUrn),
    auto_links: result.links.map((l) => toUrn(l.id)),
    expires_at: result.memory.expires_at,
  };
}
