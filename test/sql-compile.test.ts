import { sql } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { describe, expect, it } from 'vitest';
import { memories } from '../schema';
import { compile, type DbOrTx, pgArray, sql as ourSql } from '../shared/platform/data/db';

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

  it('gives a shape seen before its text as first compiled, and a new shape its own', () => {
    const shaped = (values: unknown[], column: string) =>
      ourSql`SELECT ${ourSql.raw(column)} FROM t WHERE ${ourSql.join(
        values.map((v) => ourSql`x = ${v}`),
        ourSql` OR `,
      )}`;
    const first = compile(db, shaped([1, 'a'], 'c'));
    const again = compile(db, shaped([2, null], 'c'));
    expect(again.sql).toBe(first.sql);
    expect(again.params).toEqual([2, null]);
    for (const query of [shaped([1, 'a'], 'd'), shaped([1, 'a', 3], 'c'), shaped([1], 'c'), shaped([[1, 2], 'a'], 'c')]) {
      const { sql: text, params } = drizzleOf(query);
      expect(compile(db, query)).toEqual({ sql: text, params });
      expect(compile(db, query)).toEqual({ sql: text, params }); // the second time from the kept text
    }
  });

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

describe('the sql tag (shared/platform/data/driver/sql.ts)', () => {
  const at = new Date('2026-11-26T12:00:00Z');
  // The same statement built by both tags, then compiled by drizzle: same text, same parameters.
  const build = (t: typeof sql) => ({
    'text and values': t`SELECT ${1}::int, ${'a'}, ${null}, ${true}, ${at}, ${undefined}`,
    'nested, joined and raw': t`WITH x AS (${t`SELECT ${'t'} AS t`}) SELECT ${t.join([t`${1}`, t.raw('2'), t`${'three'}`], t`, `)} FROM x`,
    'a list of values': t`SELECT 1 WHERE 2 IN ${[1, 2, 3]} AND ${'x'} = ANY(${pgArray(['x', 'y'])}::text[])`,
    'empty and joined without separator': t`${t``}${t.join([t.raw('a'), t.raw('b')])}${t.empty()}`,
    'tables and columns': t`SELECT ${memories.id} FROM ${memories} WHERE ${memories.tenantId} = ${'t'} AND ${t.join([memories.id, t`1`], t`, `)}`,
    'identifiers and params': t`SELECT ${t.identifier('x')}, ${t.param(3)}`,
  });
  const tablesOf = (q: unknown) => (q as { usedTables: string[] }).usedTables;
  const theirs = build(sql);
  const ours = build(ourSql);
  for (const name of Object.keys(theirs) as (keyof typeof theirs)[]) {
    it(`builds what drizzle's builds: ${name}`, () => {
      expect(drizzleOf(ours[name])).toEqual(drizzleOf(theirs[name]));
      expect(compile(db, ours[name])).toEqual(compile(db, theirs[name]));
      // The tables drizzle lists for its query cache (`usedTables`, internal to drizzle): the same.
      expect(tablesOf(ours[name])).toEqual(tablesOf(theirs[name]));
    });
  }
  it('builds each statement of one place in the code with its own values', () => {
    const at = (t: typeof sql, v: unknown, w: unknown) => t`SELECT ${v}, ${t`${w} + 1`} FROM x`;
    const first = ourSql`${at(ourSql, 1, 'a')}`;
    const second = at(ourSql, 2, 'b');
    expect(drizzleOf(first)).toEqual(drizzleOf(at(sql, 1, 'a')));
    expect(drizzleOf(second)).toEqual(drizzleOf(at(sql, 2, 'b')));
    expect(compile(db, second)).toEqual({ sql: 'SELECT $1, $2 + 1 FROM x', params: [2, 'b'] });
  });

  it('inlines parameters as drizzle does', () => {
    expect(drizzleOf(ourSql`SELECT ${'a'}`.inlineParams())).toEqual(drizzleOf(sql`SELECT ${'a'}`.inlineParams()));
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
