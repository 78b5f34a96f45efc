import { sql } from 'drizzle-orm';
import type { Tenant, TestEngine } from './harness';

/**
 * Runs `fn` while the first row the tenant inserts into `table` deletes the memory that row's
 * `column` names, as a DELETE committing at that moment from another request would: the insert
 * then fails its foreign key (23503). Only the first insert meets it: the firings are counted by a
 * sequence, which outlives the rollback of the failed attempt. Returns `fn`'s result and how many
 * inserts the trigger saw (more than one: the work ran again).
 */
export async function withMemoryDeletedOnFirstInsert<T>(
  engine: TestEngine,
  t: Tenant,
  on: { table: string; column: string },
  fn: () => Promise<T>,
): Promise<{ result: T; inserts: number }> {
  const exec = (statement: string) => engine.node.services.db.execute(sql.raw(statement));
  const name = `race_${on.table}_${t.tenantId.toLowerCase()}`;
  await exec(`CREATE SEQUENCE ${name}`);
  await exec(`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.tenant_id = '${t.tenantId}' AND nextval('${name}') = 1 THEN DELETE FROM memories WHERE id = NEW.${on.column}; END IF;
      RETURN NEW;
    END $$`);
  await exec(`CREATE TRIGGER ${name} BEFORE INSERT ON ${on.table} FOR EACH ROW EXECUTE FUNCTION ${name}()`);
  try {
    const result = await fn();
    const [{ inserts }] = ((await exec(`SELECT last_value AS inserts FROM ${name}`)) as unknown as { rows: { inserts: string }[] }).rows;
    return { result, inserts: Number(inserts) };
  } finally {
    await exec(`DROP TRIGGER ${name} ON ${on.table}`);
    await exec(`DROP FUNCTION ${name}()`);
    await exec(`DROP SEQUENCE ${name}`);
  }
}
