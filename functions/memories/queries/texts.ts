import { sql } from '../../../shared/platform/data/db';
import type { TenantScope } from '../../../shared/memory/access';
import { type DbOrTx, pgArray, rows } from '../../../shared/platform/data/db';

/** The observations of `ids` inside `scope` (the search's own), by id: what a reranker reads. */
export async function observationsIn(db: DbOrTx, scope: TenantScope, ids: string[]): Promise<Map<string, string>> {
  const found = await rows<{ id: string; observation: string }>(
    db,
    sql`SELECT m.id, m.observation FROM memories m WHERE m.id = ANY(${pgArray(ids)}::uuid[]) AND ${scope}`,
  );
  return new Map(found.map((r) => [r.id, r.observation]));
}
