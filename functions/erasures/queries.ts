import { and, count, desc, eq } from 'drizzle-orm';
import { erasedMemories, erasures } from '../../schema';
import type { DbOrTx } from '../../shared/platform/data/db';
import type { PageInput } from '../../shared/platform/data/pagination';
import type { Selected } from './select';

export type ErasureRow = typeof erasures.$inferSelect;

export async function insertErasure(db: DbOrTx, row: typeof erasures.$inferInsert) {
  await db.insert(erasures).values(row);
}

const CHUNK = 1000;

/** The tombstones: ids and times only. */
export async function insertTombstones(db: DbOrTx, tenantId: string, erasureId: string, erasedAt: Date, selected: Selected[]) {
  for (let i = 0; i < selected.length; i += CHUNK) {
    const chunk = selected.slice(i, i + CHUNK);
    await db
      .insert(erasedMemories)
      .values(chunk.map((s) => ({ tenantId, memoryId: s.id, erasureId, erasedAt, livedFrom: s.livedFrom, livedTo: s.livedTo })))
      .onConflictDoNothing();
  }
}

export async function erasureOf(db: DbOrTx, tenantId: string, erasureId: string): Promise<ErasureRow | null> {
  const [found] = await db
    .select()
    .from(erasures)
    .where(and(eq(erasures.tenantId, tenantId), eq(erasures.id, erasureId)));
  return found ?? null;
}

export async function listErasures(db: DbOrTx, tenantId: string, page: PageInput) {
  const where = eq(erasures.tenantId, tenantId);
  const [found, [{ n }]] = await Promise.all([
    db.select().from(erasures).where(where).orderBy(desc(erasures.erasedAt), desc(erasures.id)).limit(page.limit).offset(page.offset),
    db.select({ n: count() }).from(erasures).where(where),
  ]);
  return { page: found, total: Number(n) };
}
