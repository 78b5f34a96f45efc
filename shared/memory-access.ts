import { type SQL, sql } from 'drizzle-orm';
import { type DbOrTx, rows } from './db';

/** A live share accepted by the caller: read (or write) the owner's memories with a tag or in a space. */
export interface Grant {
  shareId: string;
  ownerTenantId: string;
  kind: 'tag' | 'space';
  tag: string;
  spaceId: string | null;
  permission: 'read' | 'write';
}

/**
 * Everything another tenant lets this one read: accepted, unrevoked shares (an invitation's expiry
 * limits when it can be joined, not how long an accepted share lasts) and live spaces that list
 * this tenant in `allowed_tenant_ids` (read only).
 */
export async function activeGrants(db: DbOrTx, tenantId: string, _now: Date): Promise<Grant[]> {
  const found = await rows<{ id: string; owner_tenant_id: string; kind: 'tag' | 'space'; tag: string; space_id: string | null; permission: 'read' | 'write' }>(
    db,
    sql`SELECT s.id, s.owner_tenant_id, s.kind, s.tag, s.space_id, s.permission
        FROM shares s LEFT JOIN context_spaces cs ON cs.id = s.space_id
        WHERE s.accepted_by_tenant = ${tenantId} AND s.revoked_at IS NULL
          AND (s.kind = 'tag' OR cs.deleted_at IS NULL)
        UNION ALL
        SELECT 'space:' || cs.id::text, cs.owner_tenant_id, 'space', cs.id::text, cs.id, 'read'
        FROM context_spaces cs
        WHERE ${tenantId} = ANY(cs.allowed_tenant_ids) AND cs.deleted_at IS NULL AND cs.owner_tenant_id <> ${tenantId}`,
  );
  return found.map((g) => ({ shareId: g.id, ownerTenantId: g.owner_tenant_id, kind: g.kind, tag: g.tag, spaceId: g.space_id, permission: g.permission }));
}

/** Memories not yet expired; expired ones vanish from every read at once, before maintenance purges them. */
export const live = (now: Date, alias = 'm') => sql`(${sql.raw(alias)}.expires_at IS NULL OR ${sql.raw(alias)}.expires_at > ${now.toISOString()})`;

/** What a grant exposes, as SQL over a memories alias. */
export function grantCondition(g: Grant, alias = 'm'): SQL {
  const m = sql.raw(alias);
  return g.kind === 'tag'
    ? sql`(${m}.tenant_id = ${g.ownerTenantId} AND ${g.tag} = ANY(${m}.tags))`
    : sql`(${m}.tenant_id = ${g.ownerTenantId} AND ${m}.space_id = ${g.spaceId}::uuid)`;
}

export type Scope = 'own' | 'shared' | 'all';

/**
 * The memories a tenant may read: its own, plus what accepted live shares expose. Every memory
 * query goes through this, so isolation is enforced in SQL, not after the fact.
 */
export function readableBy(tenantId: string, grants: Grant[], scope: Scope = 'all', alias = 'm'): SQL {
  const own = sql`${sql.raw(alias)}.tenant_id = ${tenantId}`;
  const shared = grants.map((g) => grantCondition(g, alias));
  const parts = scope === 'own' ? [own] : scope === 'shared' ? shared : [own, ...shared];
  if (!parts.length) return sql`false`;
  return sql`(${sql.join(parts, sql` OR `)})`;
}

/** A write grant from `owner` covering a memory with these tags or this space. */
export function writeGrantFor(grants: Grant[], owner: string, tags: string[], spaceId: string | null): Grant | undefined {
  return grants.find(
    (g) =>
      g.permission === 'write' &&
      g.ownerTenantId === owner &&
      ((g.kind === 'tag' && tags.includes(g.tag)) || (g.kind === 'space' && spaceId !== null && g.spaceId === spaceId)),
  );
}

export const URN_PREFIX = 'urn:uuid:';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Accepts `urn:uuid:<uuid>` or a bare uuid; returns the bare lowercase uuid, or null if malformed. */
export function parseUrn(value: string): string | null {
  const bare = value.startsWith(URN_PREFIX) ? value.slice(URN_PREFIX.length) : value;
  return UUID.test(bare) ? bare.toLowerCase() : null;
}

export const toUrn = (id: string) => `${URN_PREFIX}${id}`;
