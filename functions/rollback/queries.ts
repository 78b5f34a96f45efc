import { sql } from 'drizzle-orm';
import { type DbOrTx, rows } from '../../shared/platform/data/db';

export async function listHistory(db: DbOrTx, tenantId: string, limit: number, offset: number) {
  const page = await rows<{
    id: string;
    target: string | Date;
    created_at: string | Date;
    actor: string | null;
    removed: number;
    restored: number;
    reverted: number;
  }>(
    db,
    sql`SELECT id, target, created_at, actor, removed, restored, reverted FROM rollbacks
        WHERE tenant_id = ${tenantId} ORDER BY created_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}`,
  );
  const [{ n }] = await rows<{ n: number | string }>(db, sql`SELECT count(*) AS n FROM rollbacks WHERE tenant_id = ${tenantId}`);
  return { page, total: Number(n) };
}
