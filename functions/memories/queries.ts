import { type SQL, sql } from 'drizzle-orm';
import { type DbOrTx, pgArray, rows } from '../../shared/db';
import { type Grant, live, readableBy, type Scope } from '../../shared/memory-access';
import { COLUMNS, type MemoryRow } from '../../shared/memory-rows';

export { COLUMNS, type MemoryDto, type MemoryRow, toMemoryDto, vectorLiteral } from '../../shared/memory-rows';

export interface Filters {
  tags?: string[];
  agentId?: string;
  spaceId?: string;
  includeSuperseded?: boolean;
}

/** Readability, liveness and the optional filters, as one WHERE clause over alias `m`. */
export function whereReadable(tenantId: string, grants: Grant[], scope: Scope, now: Date, f: Filters): SQL {
  const parts: SQL[] = [readableBy(tenantId, grants, scope), live(now)];
  if (f.tags?.length) parts.push(sql`m.tags && ${pgArray(f.tags)}::text[]`);
  if (f.agentId) parts.push(sql`m.agent_id = ${f.agentId}`);
  if (f.spaceId) parts.push(sql`m.space_id = ${f.spaceId}::uuid`);
  if (f.includeSuperseded === false) parts.push(sql`m.superseded_by IS NULL`);
  return sql.join(parts, sql` AND `);
}

export async function findReadable(db: DbOrTx, id: string, where: SQL): Promise<MemoryRow | null> {
  const [row] = await rows<MemoryRow>(db, sql`SELECT ${COLUMNS} FROM memories m WHERE m.id = ${id}::uuid AND ${where}`);
  return row ?? null;
}

/** The caller's own live memory, locked for a write. */
export async function lockOwn(tx: DbOrTx, tenantId: string, id: string, now: Date): Promise<MemoryRow | null> {
  const [row] = await rows<MemoryRow>(
    tx,
    sql`SELECT ${COLUMNS} FROM memories m WHERE m.id = ${id}::uuid AND m.tenant_id = ${tenantId} AND ${live(now)} FOR UPDATE`,
  );
  return row ?? null;
}

export async function listPage(db: DbOrTx, where: SQL, limit: number, offset: number) {
  const page = await rows<MemoryRow>(
    db,
    sql`SELECT ${COLUMNS} FROM memories m WHERE ${where} ORDER BY m.created_at DESC, m.id DESC LIMIT ${limit} OFFSET ${offset}`,
  );
  const [{ n }] = await rows<{ n: number | string }>(db, sql`SELECT count(*) AS n FROM memories m WHERE ${where}`);
  return { page, total: Number(n) };
}

export async function linksOf(db: DbOrTx, id: string) {
  return rows<{ source_id: string; target_id: string; relation: string; weight: number }>(
    db,
    sql`SELECT source_id, target_id, relation, weight FROM memory_edges WHERE source_id = ${id}::uuid OR target_id = ${id}::uuid`,
  );
}

