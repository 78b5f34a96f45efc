import { sql } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { describe, expect, it } from 'vitest';
import { memories } from '../schema';
import { compile, type DbOrTx, pgArray } from '../shared/platform/data/db';

// compile() replaces drizzle's compiler for the raw SQL every query helper builds; it must give
// exactly drizzle's text and parameters, and hand anything else back to drizzle.
const dialect = new PgDialect();
const db = { dialect } as unknown as DbOrTx;
const drizzleOf = (q: ReturnType<typeof sql>) => dialect.sqlToQuery(q);

describe('SQL compile', () => {
  const at = new Date('2026-11-26T12:00:00Z');
  const cases = {
    'text and values': sql`SELECT ${1}::int, ${'a'}, ${null}, ${true}, ${at}`,
    'nested, joined and raw': sql`WITH x AS (${sql`SELECT ${'t'} AS t`}) SELECT ${sql.join([sql`${1}`, sql.raw('2'), sql`${'three'}`], sql`, `)} FROM x`,
    'a list of values': sql`SELECT 1 WHERE 2 IN ${[1, 2, 3]} AND ${'x'} = ANY(${pgArray(['x', 'y'])}::text[])`,
    'nothing between chunks': sql`SELECT 1${undefined} ${sql``}`,
    'many parameters in order': sql`SELECT ${sql.join(
      Array.from({ length: 12 }, (_, i) => sql`${i}`),
      sql`, `,
    )}`,
  };
  for (const [name, query] of Object.entries(cases)) {
    it(`gives drizzle's text and parameters: ${name}`, () => {
      expect(compile(db, query)).toEqual({ sql: drizzleOf(query).sql, params: drizzleOf(query).params });
    });
  }

  it('leaves tables, columns and inlined parameters to drizzle', () => {
    for (const query of [
      sql`SELECT ${memories.id} FROM ${memories} WHERE ${memories.tenantId} = ${'t'}`,
      sql`SELECT ${sql.identifier('x')}`,
      sql`SELECT ${'a'}`.inlineParams(),
    ]) {
      expect(compile(db, query)).toEqual(drizzleOf(query));
    }
    expect(compile(db, sql`SELECT ${memories.id} FROM ${memories}`).sql).toBe('SELECT "memories"."id" FROM "memories"');
  });
});

describe('pgArray', () => {
  const values = ['plain', 'a "quoted" word', 'back\\slash', '\\"', 'comma, brace } and {', '', 'NULL', 3];
  it('quotes every element, escaping only quotes and backslashes', () => {
    expect(pgArray(['plain', 'a"b', 'c\\d', 3, null])).toBe('{"plain","a\\"b","c\\\\d","3",NULL}');
  });
  it('reads back in PostgreSQL as the values it was given', async () => {
    const { PGlite } = await import('@electric-sql/pglite');
    const pglite = await PGlite.create();
    try {
      const { rows } = await pglite.query<{ a: (string | null)[] }>('SELECT $1::text[] AS a', [pgArray([...values, null])]);
      expect(rows[0].a).toEqual([...values.map(String), null]);
    } finally {
      await pglite.close();
    }
  });
});
