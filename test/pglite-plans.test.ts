import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPglite } from '../shared/node/database';
import { preparedRows, rows } from '../shared/platform/data/db';

/**
 * On the embedded default a statement that asks for a kept plan (db.preparedRows) is prepared once
 * and then executed (shared/platform/data/driver/pglite-plans.ts): PGlite's driver would parse and plan it on every
 * run. Same rows, same types, same errors as running it the usual way.
 */
let database: Awaited<ReturnType<typeof openPglite>>;
beforeAll(async () => {
  database = await openPglite({ dataDir: 'memory://' });
  await database.client.exec(`CREATE TABLE notes (id int PRIMARY KEY, body text NOT NULL, at timestamptz NOT NULL, tags text[] NOT NULL)`);
  await database.client.exec(`INSERT INTO notes VALUES (1, 'one', '2026-01-02T03:04:05.678Z', '{a,b}'), (2, 'two', '2026-02-03T04:05:06Z', '{}')`);
}, 60_000);
afterAll(async () => database?.close());

/** The prepared statements of the PGlite session whose text mentions `marker`. */
const preparedWith = async (marker: string) =>
  (
    await database.client.query<{ name: string }>(
      `SELECT name FROM pg_prepared_statements WHERE statement LIKE '%' || $1 || '%' AND statement NOT LIKE '%pg_prepared_statements%'`,
      [marker],
    )
  ).rows.map((r) => r.name);

describe('kept plans on PGlite', () => {
  it('prepares a statement once and answers what running it the usual way answers, timestamps as text', async () => {
    const query = (id: number) =>
      sql`SELECT id, body, at, tags, ${"it's"}::text AS quoted, now() - at > interval '1 day' AS old /* kept-1 */ FROM notes WHERE id = ${id}`;
    const usual = await rows(database.db, query(1));
    expect(await preparedRows(database.db, query(1))).toEqual(usual);
    expect(await preparedRows(database.db, query(2))).toEqual(await rows(database.db, query(2)));
    expect(usual[0]).toMatchObject({ id: 1, at: '2026-01-02 03:04:05.678+00', tags: ['a', 'b'], quoted: "it's", old: true });
    expect(await preparedWith('kept-1')).toHaveLength(1);
  });

  it('in a transaction too; a rollback leaves the statement prepared, and it runs again after', async () => {
    const query = (id: number) => sql`UPDATE notes SET body = body || '!' WHERE id = ${id} RETURNING body /* kept-2 */`;
    await expect(
      database.db.transaction(async (tx) => {
        expect(await preparedRows(tx, query(1))).toEqual([{ body: 'one!' }]);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await preparedWith('kept-2')).toHaveLength(1);
    expect(await database.db.transaction((tx) => preparedRows(tx, query(1)))).toEqual([{ body: 'one!' }]);
    expect(await preparedWith('kept-2')).toHaveLength(1);
  });

  it('a failure names the statement without its values; the next run prepares afresh and works', async () => {
    const query = (divisor: number) => sql`SELECT 10 / ${divisor}::int AS q, ${'secret-value'}::text AS s /* kept-3 */`;
    const failed = (await preparedRows(database.db, query(0)).then(
      () => expect.fail('divided by zero'),
      (err: unknown) => err,
    )) as { message: string; query: string };
    expect(failed.message).toMatch(/division by zero/);
    expect(failed.query).toBe('SELECT 10 / $1::int AS q, $2::text AS s /* kept-3 */');
    expect(await preparedRows(database.db, query(5))).toEqual([{ q: 2, s: 'secret-value' }]);
    expect(await preparedRows(database.db, query(2))).toEqual([{ q: 5, s: 'secret-value' }]);
    // The first PREPARE stood though its EXECUTE failed: the statement is kept under a second name.
    expect(await preparedWith('kept-3')).toHaveLength(2);
  });

  it('callers asking at once while it is being prepared each get their rows', async () => {
    const query = (id: number) => sql`SELECT body FROM notes WHERE id = ${id} /* kept-4 */`;
    const answers = await Promise.all([1, 2, 1, 2].map((id) => preparedRows<{ body: string }>(database.db, query(id))));
    expect(answers.map((a) => a[0].body.replace(/!$/, ''))).toEqual(['one', 'two', 'one', 'two']);
    expect(await preparedWith('kept-4')).toHaveLength(1);
  });
});
