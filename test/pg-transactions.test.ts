import { PGlite } from '@electric-sql/pglite';
import { type SQL, sql } from 'drizzle-orm';
import { drizzle, NodePgSession, NodePgTransaction } from 'drizzle-orm/node-postgres';
import { integer, pgTable, text } from 'drizzle-orm/pg-core';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Db, preparedRowsWithNext, rowsAndCommit } from '../shared/platform/data/db';
import { shortTransactions } from '../shared/platform/data/driver/short-transactions';
import { integration, ownPostgresDatabase } from './harness';
import { pglitePool } from './pglite-wire';

/**
 * Transactions whose BEGIN travels with the first statement and COMMIT with the last
 * (shared/platform/data/driver/short-transactions.ts): as node-postgres runs them (statements
 * prepared once per connection) and as Workers run them on Neon's Pool (literals in the text).
 * Whatever is sent together, the statements stay one transaction, in the order they were given.
 *
 * On Postgres (the integration run), and in every run on PGlite behind the wire protocol
 * (test/pglite-wire.ts), driven by node-postgres all the same. PGlite has one session: its pool has
 * one connection, and "seen elsewhere" is seen by that session outside the pool.
 */
const rowsTable = pgTable('tx_rows', { k: text('k').primaryKey(), n: integer('n').notNull() });
/** The rows of `tx.execute`, typed: every driver answers it with `{ rows }`, which drizzle types per driver. */
const read = async <T>(tx: { execute(q: SQL): Promise<unknown> }, query: SQL) => ((await tx.execute(query)) as { rows: T[] }).rows;
const CREATE_TABLE = 'CREATE TABLE tx_rows (k text PRIMARY KEY, n integer NOT NULL)';

interface Backend {
  poolSize: number;
  newPool(): pg.Pool;
  committedRows(): Promise<string[]>;
  close(): Promise<void>;
}

const onPostgres = async (): Promise<Backend> => {
  const own = await ownPostgresDatabase(integration.databaseUrl!);
  const client = async <T>(work: (c: pg.Client) => Promise<T>) => {
    const c = new pg.Client({ connectionString: own.url });
    await c.connect();
    try {
      return await work(c);
    } finally {
      await c.end();
    }
  };
  await client((c) => c.query(CREATE_TABLE));
  return {
    poolSize: 3,
    newPool() {
      const pool = new pg.Pool({ connectionString: own.url, max: 3 });
      // pool.end() resolves before its clients' sockets close; the DROP ... WITH (FORCE) after it can
      // terminate one still closing, and an unheard pool error would end this test process.
      pool.on('error', () => undefined);
      return pool;
    },
    committedRows: () => client(async (c) => (await c.query<{ k: string }>('SELECT k FROM tx_rows ORDER BY k')).rows.map((r) => r.k)),
    close: () => own.drop(),
  };
};

const onPglite = async (): Promise<Backend> => {
  const pglite = await PGlite.create();
  await pglite.exec(CREATE_TABLE);
  return {
    poolSize: 1,
    newPool: () => pglitePool(pglite),
    committedRows: async () => (await pglite.query<{ k: string }>('SELECT k FROM tx_rows ORDER BY k')).rows.map((r) => r.k),
    close: () => pglite.close(),
  };
};

/** node-postgres deprecates queueing a statement behind one still running (pg@9 drops its queue): none may be. */
const queuedInDriver: string[] = [];
const heard = (w: Error) => {
  if (w.message.includes('already executing a query')) queuedInDriver.push(w.message);
};
beforeAll(() => void process.on('warning', heard));
afterAll(() => {
  process.off('warning', heard);
  expect(queuedInDriver).toEqual([]);
});

const backends = [...(integration.databaseUrl ? [{ name: 'PostgreSQL', open: onPostgres }] : []), { name: 'PGlite behind the wire protocol', open: onPglite }];

describe.each(backends)('transactions two round trips shorter, on $name', ({ open }) => {
  let backend: Backend;
  beforeAll(async () => {
    backend = await open();
  }, 120_000);
  afterAll(async () => backend?.close());
  const committedRows = () => backend.committedRows();

  describe.each([
    { mode: 'prepared once per connection (node-postgres)', prepare: true },
    { mode: 'literals in the text (Neon on Workers)', prepare: false },
  ])('$mode', ({ prepare }) => {
    let db: Db;
    const tag = prepare ? 'p' : 'l';
    let POOL_SIZE: number;
    let pool: pg.Pool;
    beforeAll(() => {
      pool = backend.newPool();
      POOL_SIZE = backend.poolSize;
      db = drizzle(pool) as unknown as Db;
      shortTransactions(db, pool, { Session: NodePgSession, Transaction: NodePgTransaction, prepare });
    });
    // Before the next mode's pool: on PGlite both would share the one session and its prepared statements.
    afterAll(() => pool?.end());

    it('statements handed over together run in order, inside it', async () => {
      const seen = await db.transaction(async (tx) => {
        const [, seen] = await Promise.all([
          read<{ v: string }>(tx, sql`SELECT set_config(${'engram.tx_test'}, ${'first'}, true) AS v`),
          read<{ v: string }>(tx, sql`SELECT current_setting(${'engram.tx_test'}, true) AS v`),
        ]);
        return seen[0].v;
      });
      expect(seen).toBe('first');
    });

    it('a first statement answers as it would anywhere else: values, timestamps, array-mode rows', async () => {
      const awkward = `O'Brien \\ "quoted" $1 ünïcødé 🧠\nnext line`;
      const at = new Date('2026-11-26T12:34:56.789Z');
      const query = sql`SELECT ${awkward}::text AS s, ${at}::timestamptz AS at, ${41}::int + 1 AS n`;
      const [first, later] = await db.transaction(async (tx) => [await read(tx, query), await read(tx, query)]);
      expect(first).toEqual(later);
      expect(first).toEqual([expect.objectContaining({ s: awkward, n: 42 })]);
      await db.insert(rowsTable).values({ k: `${tag}-array-mode`, n: 7 });
      const selected = await db.transaction((tx) =>
        tx
          .select()
          .from(rowsTable)
          .where(sql`${rowsTable.k} = ${`${tag}-array-mode`}`),
      );
      expect(selected).toEqual([{ k: `${tag}-array-mode`, n: 7 }]);
    });

    it('a first statement whose parameter has no literal form runs the usual way, inside it', async () => {
      const seen = await db.transaction(async (tx) => {
        await tx.execute(sql`SELECT set_config('engram.tx_test', encode(${Buffer.from('bytes')}::bytea, 'escape'), true)`);
        return (await read<{ v: string }>(tx, sql`SELECT current_setting('engram.tx_test', true) AS v`))[0].v;
      });
      expect(seen).toBe('bytes');
    });

    it('a first statement that fails rolls back and leaves every connection of the pool clean', async () => {
      const failing = db.transaction((tx) => tx.execute(sql`SELECT 1 / ${0}::int AS v`));
      await expect(failing).rejects.toMatchObject({ cause: { code: '22012' } });
      const keys = Array.from({ length: POOL_SIZE * 2 }, (_, i) => `${tag}-after-failed-first-${i}`);
      await Promise.all(keys.map((k) => db.transaction((tx) => tx.insert(rowsTable).values({ k, n: 1 }))));
      const stored = await committedRows();
      expect(keys.filter((k) => !stored.includes(k))).toEqual([]);
    });

    it('the last statement commits with it: seen elsewhere when it returns, nothing runs after it', async () => {
      let seenBeforeReturn: string[] = [];
      const late = db.transaction(async (tx) => {
        await tx.insert(rowsTable).values({ k: `${tag}-before-last`, n: 1 });
        const answered = await rowsAndCommit<{ k: string }>(tx, sql`INSERT INTO tx_rows (k, n) VALUES (${`${tag}-last`}, ${2}) RETURNING k`);
        expect(answered).toEqual([{ k: `${tag}-last` }]);
        seenBeforeReturn = await committedRows();
        await tx.insert(rowsTable).values({ k: `${tag}-after-last`, n: 3 });
      });
      await expect(late).rejects.toMatchObject({ cause: { message: expect.stringContaining('already committed') } });
      expect(seenBeforeReturn).toEqual(expect.arrayContaining([`${tag}-before-last`, `${tag}-last`]));
      expect(await committedRows()).not.toContain(`${tag}-after-last`);
    });

    it('a last statement that is also the first carries BEGIN and COMMIT both', async () => {
      const answered = await db.transaction((tx) =>
        rowsAndCommit<{ k: string }>(tx, sql`INSERT INTO tx_rows (k, n) VALUES (${`${tag}-alone`}, ${1}) RETURNING k`),
      );
      expect(answered).toEqual([{ k: `${tag}-alone` }]);
      expect(await committedRows()).toContain(`${tag}-alone`);
    });

    // Statements of one message share their statement_timestamp() (the time the message arrived).
    it('a statement sent with the next travels in the same message, and both commit', async () => {
      const [waited, last] = await db.transaction(async (tx) => {
        await tx.insert(rowsTable).values({ k: `${tag}-opens`, n: 1 });
        const waiting = preparedRowsWithNext<{ k: string; at: string }>(
          tx,
          sql`INSERT INTO tx_rows (k, n) VALUES (${`${tag}-waited`}, ${1}) RETURNING k, statement_timestamp()::text AS at`,
        );
        const answered = await rowsAndCommit<{ k: string; at: string }>(
          tx,
          sql`INSERT INTO tx_rows (k, n) VALUES (${`${tag}-after-waited`}, ${2}) RETURNING k, statement_timestamp()::text AS at`,
        );
        return [(await waiting)[0], answered![0]];
      });
      expect([waited.k, last.k]).toEqual([`${tag}-waited`, `${tag}-after-waited`]);
      expect(waited.at).toBe(last.at);
      expect(await committedRows()).toEqual(expect.arrayContaining([`${tag}-opens`, `${tag}-waited`, `${tag}-after-waited`]));
    });

    it('a waiting statement goes out before any statement asked for after it, and on its own when awaited first', async () => {
      const [waited, seen] = await db.transaction(async (tx) => {
        await tx.execute(sql`SELECT 1`);
        const waiting = preparedRowsWithNext<{ v: string }>(tx, sql`SELECT set_config('engram.tx_test', ${'waited'}, true) AS v`);
        const current = await read<{ v: string }>(tx, sql`SELECT current_setting('engram.tx_test', true) AS v`);
        return [await waiting, current[0].v];
      });
      expect(waited).toEqual([{ v: 'waited' }]);
      expect(seen).toBe('waited');
      const stored = await db.transaction(async (tx) => {
        await tx.execute(sql`SELECT 1`);
        return preparedRowsWithNext<{ k: string }>(tx, sql`INSERT INTO tx_rows (k, n) VALUES (${`${tag}-awaited-first`}, ${1}) RETURNING k`);
      });
      expect(stored).toEqual([{ k: `${tag}-awaited-first` }]);
      expect(await committedRows()).toContain(`${tag}-awaited-first`);
    });

    it('statements waiting before anything was sent go after BEGIN, in the message of the statement that follows them', async () => {
      const [waited, last] = await db.transaction(async (tx) => {
        const setting = preparedRowsWithNext<{ v: string; at: string }>(
          tx,
          sql`SELECT set_config('engram.tx_test', ${'before BEGIN'}, true) AS v, statement_timestamp()::text AS at`,
          { planEachTime: true },
        );
        const answered = await rowsAndCommit<{ v: string; at: string }>(
          tx,
          sql`SELECT current_setting('engram.tx_test', true) AS v, statement_timestamp()::text AS at`,
        );
        return [(await setting)[0], answered![0]];
      });
      // Local to the transaction, so it did run inside it; one arrival time, so one message.
      expect([waited.v, last.v]).toEqual(['before BEGIN', 'before BEGIN']);
      expect(waited.at).toBe(last.at);
      const [first, next] = await db.transaction(async (tx) => {
        const setting = preparedRowsWithNext<{ at: string }>(
          tx,
          sql`SELECT set_config('engram.tx_test', ${'first'}, true) AS v, statement_timestamp()::text AS at`,
        );
        const current = await read<{ v: string; at: string }>(tx, sql`SELECT current_setting('engram.tx_test', true) AS v, statement_timestamp()::text AS at`);
        return [(await setting)[0], current[0]];
      });
      expect(next.v).toBe('first');
      expect(first.at).toBe(next.at);
      // Nothing after it: it goes with BEGIN on its own, and commits.
      const alone = await db.transaction((tx) =>
        preparedRowsWithNext<{ k: string }>(tx, sql`INSERT INTO tx_rows (k, n) VALUES (${`${tag}-only-waiting`}, ${1}) RETURNING k`),
      );
      expect(alone).toEqual([{ k: `${tag}-only-waiting` }]);
      expect(await committedRows()).toContain(`${tag}-only-waiting`);
    });

    it('statements with new texts, both asked for at once, still travel in one message', async () => {
      // Both texts are new to every connection of the pool: each is prepared (or written out) as it goes.
      for (let round = 0; round < POOL_SIZE + 1; round++) {
        const fresh = sql.raw(`'${tag}-fresh-${round}'`);
        const [first, next] = await db.transaction(async (tx) => {
          const waiting = preparedRowsWithNext<{ at: string }>(tx, sql`SELECT ${fresh}::text AS t, ${1}::int AS n, statement_timestamp()::text AS at`);
          const read2 = await read<{ at: string }>(tx, sql`SELECT ${fresh}::text AS u, ${2}::int AS n, statement_timestamp()::text AS at`);
          return [(await waiting)[0], read2[0]];
        });
        expect(first.at).toBe(next.at);
      }
    });

    it('a waiting statement that fails fails the one it travels with: nothing commits, the connection stays clean', async () => {
      let waiting: Promise<unknown> | undefined;
      const failing = db.transaction(async (tx) => {
        await tx.insert(rowsTable).values({ k: `${tag}-doomed-first`, n: 1 });
        waiting = preparedRowsWithNext(tx, sql`INSERT INTO tx_rows (k, n) VALUES (${`${tag}-doomed-waiting`}, ${1} / ${0}::int)`);
        await rowsAndCommit(tx, sql`INSERT INTO tx_rows (k, n) VALUES (${`${tag}-doomed-with-it`}, ${1})`);
      });
      await expect(failing).rejects.toMatchObject({ code: '22012' });
      await expect(waiting).rejects.toMatchObject({ code: '22012' });
      const keys = Array.from({ length: POOL_SIZE * 2 }, (_, i) => `${tag}-after-failed-waiting-${i}`);
      await Promise.all(keys.map((k) => db.transaction((tx) => rowsAndCommit(tx, sql`INSERT INTO tx_rows (k, n) VALUES (${k}, ${1})`))));
      const stored = await committedRows();
      expect(stored.filter((k) => k.startsWith(`${tag}-doomed`))).toEqual([]);
      expect(keys.filter((k) => !stored.includes(k))).toEqual([]);
    });

    it('a transaction that fails before a waiting statement goes out never sends it, and says so', async () => {
      let waiting: Promise<unknown> | undefined;
      const failing = db.transaction(async (tx) => {
        await tx.execute(sql`SELECT 1`);
        waiting = preparedRowsWithNext(tx, sql`INSERT INTO tx_rows (k, n) VALUES (${`${tag}-never-sent`}, ${1})`);
        throw new Error('changed its mind');
      });
      await expect(failing).rejects.toThrow('changed its mind');
      await expect(waiting).rejects.toThrow('ended before this statement was sent');
      expect(await committedRows()).not.toContain(`${tag}-never-sent`);
    });

    it('a last statement that fails takes the whole transaction with it, and the connection stays clean', async () => {
      const failing = db.transaction(async (tx) => {
        await tx.insert(rowsTable).values({ k: `${tag}-doomed`, n: 1 });
        await rowsAndCommit(tx, sql`INSERT INTO tx_rows (k, n) VALUES (${`${tag}-doomed-last`}, ${1} / ${0}::int)`);
      });
      await expect(failing).rejects.toMatchObject({ code: '22012' });
      const keys = Array.from({ length: POOL_SIZE * 2 }, (_, i) => `${tag}-after-failed-last-${i}`);
      await Promise.all(keys.map((k) => db.transaction((tx) => rowsAndCommit(tx, sql`INSERT INTO tx_rows (k, n) VALUES (${k}, ${1})`))));
      const stored = await committedRows();
      expect(stored).not.toContain(`${tag}-doomed`);
      expect(keys.filter((k) => !stored.includes(k))).toEqual([]);
    });
  });
});
