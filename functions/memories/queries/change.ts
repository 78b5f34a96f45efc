import { type SQL } from 'drizzle-orm';
import { sql } from '../../../shared/platform/data/db';
import { COLUMNS, type MemoryRow } from '../../../shared/memory/rows';
import { type DbOrTx, pgArray, rows } from '../../../shared/platform/data/db';

/** Applies `sets` only if the row is still at `version` (optimistic concurrency); null when it moved on. */
export async function updateIfVersion(tx: DbOrTx, tenantId: string, id: string, version: number, sets: SQL[]) {
  const [row] = await rows<MemoryRow>(
    tx,
    sql`UPDATE memories m SET ${sql.join(sets, sql`, `)}
        WHERE m.id = ${id}::uuid AND m.tenant_id = ${tenantId} AND m.version = ${version}
        RETURNING ${COLUMNS}`,
  );
  return row ?? null;
}

export async function deleteMemory(tx: DbOrTx, tenantId: string, id: string) {
  await tx.execute(sql`DELETE FROM memories WHERE id = ${id}::uuid AND tenant_id = ${tenantId}`);
}

/** Memories that `id` superseded become current again. */
export function reviveSupersededBy(tx: DbOrTx, tenantId: string, id: string, now: Date) {
  return rows<MemoryRow>(
    tx,
    sql`UPDATE memories m SET superseded_by = NULL, version = m.version + 1, updated_at = ${now.toISOString()}
        WHERE m.tenant_id = ${tenantId} AND m.superseded_by = ${id}::uuid RETURNING ${COLUMNS}`,
  );
}

// --- maintenance -------------------------------------------------------------------------------

/** Memories whose TTL has passed, any tenant's (maintenance), locked and skipped by concurrent purges. */
export function lockExpired(tx: DbOrTx, now: Date, limit: number) {
  return rows<MemoryRow & { embedding_text: string }>(
    tx,
    sql`SELECT ${COLUMNS}, m.embedding::text AS embedding_text FROM memories m
        WHERE m.expires_at <= ${now.toISOString()}
        ORDER BY m.expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED`,
  );
}

export async function deleteMemories(tx: DbOrTx, tenantId: string, ids: string[]) {
  await tx.execute(sql`DELETE FROM memories WHERE tenant_id = ${tenantId} AND id = ANY(${pgArray(ids)}::uuid[])`);
}
