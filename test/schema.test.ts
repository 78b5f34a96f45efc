import { getTableColumns, getTableName, isTable } from 'drizzle-orm';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as schema from '../schema';
import { createEngine, type TestEngine } from './harness';

/**
 * schema/ is the map of the database: every table the migrations create has its drizzle table
 * there, with the same columns, so a migration that adds a table or a column without it fails here.
 */
let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

describe('schema/ and the migrated database agree', () => {
  it('every table and every column of the migrations is declared in schema/, and nothing more', async () => {
    const result = await engine.sql<{ table_name: string; column_name: string }>(sql`
      SELECT table_name, column_name FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name NOT IN ('engram_migrations')
      ORDER BY table_name, column_name`);
    const database = new Map<string, string[]>();
    for (const r of result) database.set(r.table_name, [...(database.get(r.table_name) ?? []), r.column_name]);

    const declared = new Map<string, string[]>();
    for (const value of Object.values(schema)) {
      if (!isTable(value)) continue;
      declared.set(
        getTableName(value),
        Object.values(getTableColumns(value))
          .map((c) => c.name)
          .sort(),
      );
    }
    expect([...declared.keys()].sort()).toEqual([...database.keys()].sort());
    for (const [table, columns] of database) expect(declared.get(table), table).toEqual(columns.sort());
  });
});
