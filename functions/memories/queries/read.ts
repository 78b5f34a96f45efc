import { type SQL } from 'drizzle-orm';
import { sql } from '../../../shared/platform/data/db';
import { confinedTo, type Grant, type InStatementGrants, live, narrow, readableBy, type Scope, type TenantScope } from '../../../shared/memory/access';
import type { KeyRestriction } from '../../../shared/platform/contract/context';
import { COLUMNS, type MemoryRow } from '../../../shared/memory/rows';
import { type DbOrTx, pgArray, rows } from '../../../shared/platform/data/db';
import { type PageInput, pageRows } from '../../../shared/platform/data/pagination';
import type { Tier } from '../../../shared/platform/contract/tiers';
import { levelsAtLeast, type SourceKind, type Trust } from '../../../shared/memory/provenance';

export interface Filters {
  tags?: string[];
  agentId?: string;
  spaceId?: string;
  includeSuperseded?: boolean;
  /** Event time window: `occurred_at` (its `created_at` when unset) at or after / before. */
  occurredAfter?: Date;
  occurredBefore?: Date;
  /** The caller's key restriction: a confined key sees only its agent's and spaces' memories. */
  key?: KeyRestriction;
  /** Only memories trusted at least this much, as the reader sees them (provenance.seenBy). */
  minTrust?: Trust;
  /** Only memories of these source kinds, as the reader sees them. */
  sourceKinds?: SourceKind[];
}

/**
 * The provenance filters in SQL, before ranking, so a page or a limit holds after them. Another
 * account's memory is `share` and `external` to the reader (provenance.seenBy), whatever its row says.
 */
function provenanceFilters(tenantId: string, f: Filters): SQL[] {
  const parts: SQL[] = [];
  const levels = f.minTrust ? levelsAtLeast(f.minTrust) : [];
  if (f.minTrust && !levels.includes('external')) parts.push(sql`m.tenant_id = ${tenantId} AND m.trust = ANY(${pgArray(levels)}::text[])`);
  if (f.sourceKinds?.length) {
    const kinds = sql`m.source_kind = ANY(${pgArray(f.sourceKinds)}::text[])`;
    parts.push(f.sourceKinds.includes('share') ? sql`(m.tenant_id <> ${tenantId} OR ${kinds})` : sql`m.tenant_id = ${tenantId} AND ${kinds}`);
  }
  return parts;
}

/** Readability, liveness and the optional filters, as one scope over alias `m`. */
export function whereReadable(tenantId: string, grants: Grant[] | InStatementGrants, scope: Scope, now: Date, f: Filters): TenantScope {
  const parts: SQL[] = [live(now)];
  if (f.tags?.length) parts.push(sql`m.tags && ${pgArray(f.tags)}::text[]`);
  if (f.agentId) parts.push(sql`m.agent_id = ${f.agentId}`);
  if (f.spaceId) parts.push(sql`m.space_id = ${f.spaceId}::uuid`);
  if (f.includeSuperseded === false) parts.push(sql`m.superseded_by IS NULL`);
  parts.push(...provenanceFilters(tenantId, f));
  parts.push(...occurredWithin(f));
  parts.push(...confinedTo(f.key));
  return narrow(readableBy(tenantId, grants, scope), ...parts);
}

/** The event-time window as conditions over alias `m` (a real row or an as_of state: queries/as-of.ts). */
export function occurredWithin(f: Pick<Filters, 'occurredAfter' | 'occurredBefore'>): SQL[] {
  const parts: SQL[] = [];
  if (f.occurredAfter) parts.push(sql`coalesce(m.occurred_at, m.created_at) >= ${f.occurredAfter.toISOString()}::timestamptz`);
  if (f.occurredBefore) parts.push(sql`coalesce(m.occurred_at, m.created_at) < ${f.occurredBefore.toISOString()}::timestamptz`);
  return parts;
}

export async function findIn(db: DbOrTx, scope: TenantScope, id: string): Promise<MemoryRow | null> {
  const [row] = await rows<MemoryRow>(db, sql`SELECT ${COLUMNS} FROM memories m WHERE m.id = ${id}::uuid AND ${scope}`);
  return row ?? null;
}

/** The tenant's own live memory (within what `key` confines to); `lock` takes it FOR UPDATE for a write. */
export async function findOwn(db: DbOrTx, tenantId: string, id: string, now: Date, lock = false, key?: KeyRestriction): Promise<MemoryRow | null> {
  const confined = confinedTo(key).map((c) => sql` AND ${c}`);
  const [row] = await rows<MemoryRow>(
    db,
    sql`SELECT ${COLUMNS} FROM memories m WHERE m.id = ${id}::uuid AND m.tenant_id = ${tenantId} AND ${live(now)}${sql.join(confined)} ${lock ? sql`FOR UPDATE` : sql``}`,
  );
  return row ?? null;
}

export function listPage(db: DbOrTx, scope: TenantScope, page: PageInput) {
  return pageRows<MemoryRow>(
    db,
    sql`SELECT ${COLUMNS} FROM memories m WHERE ${scope} ORDER BY m.created_at DESC, m.id DESC`,
    sql`SELECT count(*) AS n FROM memories m WHERE ${scope}`,
    page,
  );
}

/** A keyset page for exports: newest first, after the (created_at, id) of the last row sent. */
export function pageAfter(db: DbOrTx, scope: TenantScope, after: { createdAt: string; id: string } | null, limit: number) {
  const cursor = after ? sql`AND (m.created_at, m.id) < (${after.createdAt}::timestamptz, ${after.id}::uuid)` : sql``;
  return rows<MemoryRow>(db, sql`SELECT ${COLUMNS} FROM memories m WHERE ${scope} ${cursor} ORDER BY m.created_at DESC, m.id DESC LIMIT ${limit}`);
}

export function linksOf(db: DbOrTx, tenantId: string, id: string) {
  return rows<{ source_id: string; target_id: string; relation: string; weight: number }>(
    db,
    sql`SELECT source_id, target_id, relation, weight FROM memory_edges
        WHERE tenant_id = ${tenantId} AND (source_id = ${id}::uuid OR target_id = ${id}::uuid)`,
  );
}

export async function embeddingOf(db: DbOrTx, tenantId: string, id: string): Promise<number[]> {
  const [row] = await rows<{ embedding: string }>(
    db,
    sql`SELECT embedding::text AS embedding FROM memories WHERE id = ${id}::uuid AND tenant_id = ${tenantId}`,
  );
  return JSON.parse(row.embedding) as number[];
}

export async function tierOf(db: DbOrTx, tenantId: string): Promise<Tier> {
  const [t] = await rows<{ tier: Tier }>(db, sql`SELECT tier FROM tenants WHERE id = ${tenantId}`);
  return t.tier;
}

/** A live space and who owns it (the caller compares the owner). */
export async function spaceOf(db: DbOrTx, spaceId: string) {
  const [space] = await rows<{ owner_tenant_id: string; allowed_agent_ids: string[] }>(
    db,
    sql`SELECT owner_tenant_id, allowed_agent_ids FROM context_spaces WHERE id = ${spaceId}::uuid AND deleted_at IS NULL`,
  );
  return space ?? null;
}

// --- context -----------------------------------------------------------------------------------

export function recentMemories(db: DbOrTx, tenantId: string, now: Date, limit: number, f: ContextFilters = {}) {
  const confined = contextWhere(tenantId, f);
  return rows<MemoryRow>(
    db,
    sql`SELECT ${COLUMNS} FROM memories m WHERE m.tenant_id = ${tenantId} AND ${live(now)}${sql.join(confined)} ORDER BY m.created_at DESC, m.id DESC LIMIT ${limit}`,
  );
}

/** What narrows the session context: the key's confinement and the provenance filters. */
export type ContextFilters = Pick<Filters, 'key' | 'minTrust' | 'sourceKinds'>;

/** The context's conditions beyond the tenant and liveness, each with its leading AND. */
const contextWhere = (tenantId: string, f: ContextFilters) => [...confinedTo(f.key), ...provenanceFilters(tenantId, f)].map((c) => sql` AND ${c}`);

export async function countCreatedSince(db: DbOrTx, tenantId: string, since: Date, now: Date, f: ContextFilters = {}): Promise<number> {
  const confined = contextWhere(tenantId, f);
  const [{ n }] = await rows<{ n: string | number }>(
    db,
    sql`SELECT count(*) AS n FROM memories m WHERE m.tenant_id = ${tenantId} AND ${live(now)}${sql.join(confined)} AND m.created_at > ${since.toISOString()}`,
  );
  return Number(n);
}

export async function lastEventAt(db: DbOrTx, tenantId: string): Promise<Date | null> {
  const [last] = await rows<{ at: Date | string }>(db, sql`SELECT at FROM memory_events WHERE tenant_id = ${tenantId} ORDER BY at DESC, id DESC LIMIT 1`);
  return last ? new Date(last.at) : null;
}
