import { type SQL } from 'drizzle-orm';
import { sql } from '../platform/data/db';
import type { KeyRestriction } from '../platform/contract/context';
import { type DbOrTx, pgArray, rows } from '../platform/data/db';

/**
 * What another tenant lets the caller read (or write): an accepted share of a tag or a space
 * (`via: 'share'`), or a space whose `allowed_tenant_ids` lets the caller in (`via: 'space'`).
 */
export interface Grant {
  shareId: string;
  ownerTenantId: string;
  kind: 'tag' | 'space';
  tag: string;
  spaceId: string | null;
  permission: 'read' | 'write';
  via: 'share' | 'space';
}

/**
 * Whether a space's `allowed_tenant_ids` lets the tenant in: it is listed itself, or as
 * `team:<team_id>` of a team it is a member of (any role). Read at query time, so removing a
 * member ends the access at once.
 */
export const allowedInSpace = (tenantId: string, alias = 'cs') =>
  sql`${sql.raw(alias)}.allowed_tenant_ids && (ARRAY[${tenantId}::text] || ARRAY(SELECT 'team:' || tm.team_id FROM team_members tm WHERE tm.tenant_id = ${tenantId}))`;

/** Roles of a granted team whose members may store into a space that opts in (`team_write`). */
export const TEAM_WRITER_ROLES = ['owner', 'admin', 'member'] as const;
const writerRoles = () => sql`${pgArray(TEAM_WRITER_ROLES)}::text[]`;

/**
 * Whether the tenant may store into the space (alias `cs`) as a team member: the space opts in
 * (`team_write`) and lists `team:<team_id>` of a team where the tenant is owner, admin or member
 * (not `readonly`). Plain tenant ids in `allowed_tenant_ids` never write. Read at query time.
 */
export const teamWriterIn = (tenantId: string, alias = 'cs') => {
  const cs = sql.raw(alias);
  return sql`(${cs}.team_write AND EXISTS (SELECT 1 FROM team_members tm
              WHERE tm.tenant_id = ${tenantId} AND tm.role = ANY(${writerRoles()})
                AND 'team:' || tm.team_id = ANY(${cs}.allowed_tenant_ids)))`;
};

/**
 * Whose spaces count as grants of a read. A space's `allowed_tenant_ids` is its owner's act alone,
 * so a space that lists the tenant (or a team it belongs to) enters a read only when the reader
 * asks for it: by naming the space (`space_id`), the shared scope, the memory itself, or by writing
 * into the space. Otherwise (`listedSpaces: false`) only shares the tenant accepted count, so no
 * other tenant can push memories into its default list or search.
 */
export interface GrantReader {
  tenantId: string;
  listedSpaces: boolean;
}

/** The rows of activeGrants, as a query (also the subject of grantsExist). */
const grantRows = ({ tenantId, listedSpaces }: GrantReader) => {
  const accepted = sql`
  SELECT s.id, s.owner_tenant_id, s.kind, s.tag, s.space_id, s.permission, 'share' AS via
  FROM shares s LEFT JOIN context_spaces cs ON cs.id = s.space_id
  WHERE s.accepted_by_tenant = ${tenantId} AND s.revoked_at IS NULL
    AND (s.kind = 'tag' OR cs.deleted_at IS NULL)`;
  if (!listedSpaces) return accepted;
  return sql`${accepted}
  UNION ALL
  SELECT 'space:' || cs.id::text, cs.owner_tenant_id, 'space', cs.id::text, cs.id,
         CASE WHEN ${teamWriterIn(tenantId)} THEN 'write' ELSE 'read' END, 'space'
  FROM context_spaces cs
  WHERE ${allowedInSpace(tenantId)} AND cs.deleted_at IS NULL AND cs.owner_tenant_id <> ${tenantId}`;
};

/** SQL boolean: whether activeGrants would find any, read in the caller's statement (its snapshot). */
export const grantsExist = (reader: GrantReader) => sql`EXISTS (${grantRows(reader)})`;

/**
 * Everything another tenant lets this one read: accepted, unrevoked shares (an invitation's expiry
 * limits when it can be joined, not how long an accepted share lasts) and, with `listedSpaces`, live
 * spaces that list this tenant in `allowed_tenant_ids`: read only, or write when the tenant is a
 * team writer there (`teamWriterIn`).
 */
export async function activeGrants(db: DbOrTx, reader: GrantReader): Promise<Grant[]> {
  return (await rows<GrantRow>(db, grantRows(reader))).map(toGrant);
}

type GrantRow = {
  id: string;
  owner_tenant_id: string;
  kind: 'tag' | 'space';
  tag: string;
  space_id: string | null;
  permission: 'read' | 'write';
  via: 'share' | 'space';
};
const toGrant = (g: GrantRow): Grant => ({
  shareId: g.id,
  ownerTenantId: g.owner_tenant_id,
  kind: g.kind,
  tag: g.tag,
  spaceId: g.space_id,
  permission: g.permission,
  via: g.via,
});

/** activeGrants as one JSON value inside another statement (its snapshot); read it with grantsFromJson. */
export const grantsJson = (reader: GrantReader) => sql`(SELECT coalesce(json_agg(g), '[]') FROM (${grantRows(reader)}) g)`;
export const grantsFromJson = (value: unknown): Grant[] => (typeof value === 'string' ? (JSON.parse(value) as GrantRow[]) : (value as GrantRow[])).map(toGrant);

/**
 * Inside a store's transaction: confirms the tenant is still a team writer of the space and holds
 * that fact until commit. The space row and the membership rows that grant the write are locked
 * FOR SHARE, so a concurrent role change, member removal, space update or delete waits for the
 * store, or the store waits for it and then sees the new state (no write lands after the change
 * that revoked it has answered). Returns the granting team ids; empty when the grant is gone.
 */
export async function lockTeamWrite(tx: DbOrTx, tenantId: string, spaceId: string): Promise<string[]> {
  const found = await rows<{ team_id: string }>(
    tx,
    sql`SELECT tm.team_id FROM context_spaces cs
        JOIN team_members tm ON 'team:' || tm.team_id = ANY(cs.allowed_tenant_ids)
        WHERE cs.id = ${spaceId}::uuid AND cs.deleted_at IS NULL AND cs.team_write
          AND tm.tenant_id = ${tenantId} AND tm.role = ANY(${writerRoles()})
        ORDER BY tm.team_id
        FOR SHARE OF cs, tm`,
  );
  return found.map((r) => r.team_id);
}

/** Memories not yet expired; expired ones vanish from every read at once, before maintenance purges them. */
export const live = (now: Date, alias = 'm') => sql`(${sql.raw(alias)}.expires_at IS NULL OR ${sql.raw(alias)}.expires_at > ${now.toISOString()})`;

/**
 * What a grant exposes of a memories alias `m`: its owner's memories carrying its tag (a tag grant) or
 * in its space (a space grant). The grant's owner, tag and space are SQL: values of a Grant read
 * before (grantCondition) or columns of the grant rows inside the same statement (grantsExpose).
 */
const exposes = {
  tag: (m: SQL, owner: SQL, tag: SQL) => sql`(${m}.tenant_id = ${owner} AND ${tag} = ANY(${m}.tags))`,
  space: (m: SQL, owner: SQL, spaceId: SQL) => sql`(${m}.tenant_id = ${owner} AND ${m}.space_id = ${spaceId})`,
};

/** What a grant exposes, as SQL over a memories alias. */
export function grantCondition(g: Grant, alias = 'm'): SQL {
  const m = sql.raw(alias);
  return g.kind === 'tag' ? exposes.tag(m, sql`${g.ownerTenantId}`, sql`${g.tag}`) : exposes.space(m, sql`${g.ownerTenantId}`, sql`${g.spaceId}::uuid`);
}

/**
 * Whether any of the reader's grants (activeGrants) exposes the memory of alias `m`, with the grants
 * read inside the caller's statement (its snapshot): a keyed read is one round trip, with what
 * grantCondition would find over the grants read first.
 */
function grantsExpose(reader: GrantReader, alias = 'm'): SQL {
  const m = sql.raw(alias);
  const [owner, tag, spaceId] = [sql`g.owner_tenant_id`, sql`g.tag`, sql`g.space_id`];
  return sql`EXISTS (SELECT 1 FROM (${grantRows(reader)}) g
    WHERE (g.kind = 'tag' AND ${exposes.tag(m, owner, tag)}) OR (g.kind = 'space' AND ${exposes.space(m, owner, spaceId)}))`;
}

export type Scope = 'own' | 'shared' | 'all';

declare const scoped: unique symbol;
/**
 * SQL over `memories m` that already limits rows to what one tenant may see. Only the builders in
 * this file make one, so a query helper that takes it cannot be handed a filter that forgot the
 * tenant: that does not compile.
 */
export type TenantScope = SQL & { readonly [scoped]: true };
const scope = (condition: SQL) => condition as TenantScope;

/** The tenant's own memories. */
export const ownedBy = (tenantId: string, alias = 'm'): TenantScope => scope(sql`${sql.raw(alias)}.tenant_id = ${tenantId}`);

/** What one grant exposes of its owner's store (writes through a share stay inside it). */
export const grantScope = (g: Grant, alias = 'm'): TenantScope => scope(grantCondition(g, alias));

/** A scope narrowed by more conditions (liveness, filters): still scoped. */
export const narrow = (base: TenantScope, ...conditions: SQL[]): TenantScope => scope(sql.join([base, ...conditions], sql` AND `));

/** The tenant's grants read inside the statement that uses them, not before (grantsExpose). */
export interface InStatementGrants {
  listedSpaces: boolean;
}

/**
 * The memories a tenant may read: its own, plus what the grants expose (see GrantReader for which
 * grants a read may include), given as read before or to be read in the statement (one round trip). Every memory query goes through this, so isolation is enforced in SQL,
 * not after the fact.
 */
export function readableBy(tenantId: string, grants: Grant[] | InStatementGrants, which: Scope = 'all', alias = 'm'): TenantScope {
  const own = sql`${sql.raw(alias)}.tenant_id = ${tenantId}`;
  const shared = Array.isArray(grants) ? grants.map((g) => grantCondition(g, alias)) : [grantsExpose({ tenantId, listedSpaces: grants.listedSpaces }, alias)];
  const parts = which === 'own' ? [own] : which === 'shared' ? shared : [own, ...shared];
  if (!parts.length) return scope(sql`false`);
  return scope(sql`(${sql.join(parts, sql` OR `)})`);
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

/**
 * A restricted key's confinement as conditions over a memories alias: only its agent's memories
 * (`agent_id`), only memories in its spaces (`space_ids`; a memory in no space is outside). None
 * for a key that is not confined, so every read and write that adds them sees what the key may.
 */
export function confinedTo(restriction: KeyRestriction | undefined, alias = 'm'): SQL[] {
  if (!restriction) return [];
  const m = sql.raw(alias);
  const parts: SQL[] = [];
  if (restriction.agentId !== null) parts.push(sql`${m}.agent_id = ${restriction.agentId}`);
  if (restriction.spaceIds !== null) parts.push(sql`${m}.space_id = ANY(${pgArray(restriction.spaceIds)}::uuid[])`);
  return parts;
}
