import { type SQL, sql } from 'drizzle-orm';
import { type DbOrTx, pgArray, rows, type StorageKind } from '../../shared/platform/data/db';
import { allowedInSpace, confinedTo, live, TEAM_WRITER_ROLES } from '../../shared/memory/access';
import type { KeyRestriction } from '../../shared/platform/contract/context';
import { COLUMNS, type MemoryRow } from '../../shared/memory/rows';
import { nearestMemories, vectorRead } from '../../shared/memory/vector-search';
import type { Access, SpaceRow } from './schemas';

const SPACE_COLUMNS = sql.raw(
  'cs.id, cs.owner_tenant_id, cs.name, cs.description, cs.allowed_agent_ids, cs.allowed_tenant_ids, cs.tags, cs.team_write, cs.created_at, cs.updated_at, cs.deleted_at',
);

/** Live memories of the owner in the space (memories of other tenants never count). */
const memoryCount = (now: Date) => sql`(SELECT count(*) FROM memories m WHERE m.space_id = cs.id AND m.tenant_id = cs.owner_tenant_id AND ${live(now)})`;

/** An accepted, unrevoked, unexpired share of this space (alias `cs`) held by the tenant. */
const sharedWith = (tenantId: string, now: Date) =>
  sql`EXISTS (SELECT 1 FROM shares s
              WHERE s.kind = 'space' AND s.space_id = cs.id AND s.owner_tenant_id = cs.owner_tenant_id
                AND s.accepted_by_tenant = ${tenantId} AND s.revoked_at IS NULL
                AND (s.expires_at IS NULL OR s.expires_at > ${now.toISOString()}))`;

const accessOf = (tenantId: string, now: Date) =>
  sql`CASE WHEN cs.owner_tenant_id = ${tenantId} THEN 'owner'
           WHEN ${allowedInSpace(tenantId)} THEN 'allowed_tenant'
           WHEN ${sharedWith(tenantId, now)} THEN 'share' END`;

export type SpaceWithAccess = SpaceRow & { access: Access | null };

/**
 * A live space by id, whoever owns it, with the caller's access (null: none) and its memory count.
 * The access check lives in SQL next to the tenant id; callers turn `access = null` into 403.
 */
export async function findSpace(db: DbOrTx, tenantId: string, id: string, now: Date, lock = false): Promise<SpaceWithAccess | null> {
  const [row] = await rows<SpaceWithAccess>(
    db,
    sql`SELECT ${SPACE_COLUMNS}, ${memoryCount(now)} AS memory_count, ${accessOf(tenantId, now)} AS access
        FROM context_spaces cs WHERE cs.id = ${id}::uuid AND cs.deleted_at IS NULL
        ${lock ? sql`FOR UPDATE OF cs` : sql``}`,
  );
  return row ?? null;
}

/** Spaces the tenant owns or was granted (allowed_tenant_ids or an accepted space share), oldest first. */
export async function listSpaces(db: DbOrTx, tenantId: string, now: Date, limit: number, offset: number, onlyIds: readonly string[] | null = null) {
  const only = onlyIds ? sql` AND cs.id = ANY(${pgArray(onlyIds)}::uuid[])` : sql``;
  const visible = sql`cs.deleted_at IS NULL AND (cs.owner_tenant_id = ${tenantId} OR ${allowedInSpace(tenantId)} OR ${sharedWith(tenantId, now)})${only}`;
  const page = await rows<SpaceWithAccess>(
    db,
    sql`SELECT ${SPACE_COLUMNS}, ${memoryCount(now)} AS memory_count, ${accessOf(tenantId, now)} AS access
        FROM context_spaces cs WHERE ${visible}
        ORDER BY cs.created_at, cs.id LIMIT ${limit} OFFSET ${offset}`,
  );
  const [{ n }] = await rows<{ n: number | string }>(db, sql`SELECT count(*) AS n FROM context_spaces cs WHERE ${visible}`);
  return { page, total: Number(n) };
}

/**
 * Of these team ids, those the tenant may grant a space to: teams where it is owner, admin or member
 * (a readonly member only reads what its team is given, it cannot hand the whole team a space).
 */
export async function grantableTeams(db: DbOrTx, tenantId: string, teamIds: string[]): Promise<Set<string>> {
  if (!teamIds.length) return new Set();
  const found = await rows<{ team_id: string }>(
    db,
    sql`SELECT tm.team_id FROM team_members tm
        WHERE tm.tenant_id = ${tenantId} AND tm.team_id = ANY(${pgArray(teamIds)}::text[]) AND tm.role = ANY(${pgArray(TEAM_WRITER_ROLES)}::text[])`,
  );
  return new Set(found.map((r) => r.team_id));
}

export interface SpaceFields {
  name: string;
  description: string | null;
  allowedAgentIds: string[];
  allowedTenantIds: string[];
  tags: string[];
  teamWrite: boolean;
}

export async function insertSpace(tx: DbOrTx, id: string, owner: string, f: SpaceFields, now: Date): Promise<SpaceRow> {
  const [row] = await rows<SpaceRow>(
    tx,
    sql`INSERT INTO context_spaces AS cs (id, owner_tenant_id, name, description, allowed_agent_ids, allowed_tenant_ids, tags, team_write, created_at, updated_at)
        VALUES (${id}::uuid, ${owner}, ${f.name}, ${f.description}, ${pgArray(f.allowedAgentIds)}::text[],
                ${pgArray(f.allowedTenantIds)}::text[], ${pgArray(f.tags)}::text[], ${f.teamWrite}, ${now.toISOString()}, ${now.toISOString()})
        RETURNING ${SPACE_COLUMNS}`,
  );
  return { ...row, memory_count: 0 };
}

export async function updateSpace(tx: DbOrTx, owner: string, id: string, f: SpaceFields, now: Date): Promise<SpaceRow> {
  const [row] = await rows<SpaceRow>(
    tx,
    sql`UPDATE context_spaces cs SET name = ${f.name}, description = ${f.description},
          allowed_agent_ids = ${pgArray(f.allowedAgentIds)}::text[], allowed_tenant_ids = ${pgArray(f.allowedTenantIds)}::text[],
          tags = ${pgArray(f.tags)}::text[], team_write = ${f.teamWrite}, updated_at = ${now.toISOString()}
        WHERE cs.id = ${id}::uuid AND cs.owner_tenant_id = ${owner} AND cs.deleted_at IS NULL
        RETURNING ${SPACE_COLUMNS}, ${memoryCount(now)} AS memory_count`,
  );
  return row;
}

export async function softDeleteSpace(tx: DbOrTx, owner: string, id: string, now: Date): Promise<void> {
  await tx.execute(
    sql`UPDATE context_spaces SET deleted_at = ${now.toISOString()}, updated_at = ${now.toISOString()}
        WHERE id = ${id}::uuid AND owner_tenant_id = ${owner} AND deleted_at IS NULL`,
  );
}

export interface MemoryFilter {
  tags?: string[];
  agentId?: string;
  vector?: string;
  /** A restricted key's confinement (its agent; its spaces are checked before). */
  key?: KeyRestriction;
}

/** The owner's live memories in a space, newest first, or by cosine distance when a vector is given. */
export async function spaceMemories(
  db: DbOrTx,
  storage: StorageKind,
  owner: string,
  spaceId: string,
  now: Date,
  f: MemoryFilter,
  limit: number,
  offset: number,
) {
  const parts: SQL[] = [sql`m.tenant_id = ${owner}`, sql`m.space_id = ${spaceId}::uuid`, live(now)];
  if (f.tags?.length) parts.push(sql`m.tags && ${pgArray(f.tags)}::text[]`);
  if (f.agentId) parts.push(sql`m.agent_id = ${f.agentId}`);
  parts.push(...confinedTo(f.key));
  const where = sql.join(parts, sql` AND `);
  const page = f.vector
    ? // Without iterative scans the graph yields about ef_search rows, too few for a space's filter or a deep page.
      await vectorRead<MemoryRow & { similarity: number | string }>(db, storage, limit + offset, nearestMemories(COLUMNS, where, f.vector!, { limit, offset }))
    : await rows<MemoryRow & { similarity?: undefined }>(
        db,
        sql`SELECT ${COLUMNS} FROM memories m WHERE ${where} ORDER BY m.created_at DESC, m.id DESC LIMIT ${limit} OFFSET ${offset}`,
      );
  const [{ n }] = await rows<{ n: number | string }>(db, sql`SELECT count(*) AS n FROM memories m WHERE ${where}`);
  return { page, total: Number(n) };
}
