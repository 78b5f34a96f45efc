import { type DbOrTx, rows, sql } from '../../../shared/platform/data/db';
import { KEYWORD_STAGES } from './keyword-stages';

/**
 * The tenants whose words' statistics are kept (migrations/0058): those that hold at least half
 * the memories the staged keyword path starts at, so a tenant reaching it has them already. At
 * most `limit`, the biggest first. A system query across tenants over the corpus statistics; its
 * caller folds each one with `foldLexemeStats`, which takes the tenant.
 */
export async function lexemeStatsTenants(db: DbOrTx, limit: number) {
  const due = await rows<{ tenant_no: number }>(
    db,
    sql`SELECT t.tenant_no FROM (
          SELECT tenant_id, sum(docs) AS docs FROM memory_corpus_stats GROUP BY tenant_id HAVING sum(docs) >= ${KEYWORD_STAGES.minDocs / 2}
        ) s JOIN tenants t ON t.id = s.tenant_id
        ORDER BY s.docs DESC, t.tenant_no LIMIT ${limit}`,
  );
  return due.map((r) => Number(r.tenant_no));
}

/**
 * Counts the tenant's next memories after its mark (at most `atMost`) into its words' statistics
 * and moves the mark past them, in one statement (migrations/0058, memory_lexeme_fold); nothing when
 * fewer than `atLeast` are there. Returns how many it counted.
 */
export async function foldLexemeStats(db: DbOrTx, tenantNo: number, atLeast: number, atMost: number) {
  const [r] = await rows<{ n: number }>(db, sql`SELECT memory_lexeme_fold(${tenantNo}::int, ${atLeast}::int, ${atMost}::int) AS n`);
  return Number(r.n);
}
