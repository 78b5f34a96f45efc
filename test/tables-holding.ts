import { sql } from 'drizzle-orm';
import type { TestEngine } from './harness';

/** Every table of the database with a row whose text holds `needle`: where content still lives. */
export async function tablesHolding(engine: TestEngine, needle: string): Promise<string[]> {
  const tables = await engine.sql<{ table_name: string }>(
    sql`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1`,
  );
  const found: string[] = [];
  for (const { table_name } of tables) {
    const [hit] = await engine.sql<{ n: number | string }>(sql`SELECT count(*) AS n FROM ${sql.identifier(table_name)} t WHERE strpos(t::text, ${needle}) > 0`);
    if (Number(hit.n) > 0) found.push(table_name);
  }
  return found;
}
