import { mkdir } from 'node:fs/promises';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { drizzle as drizzlePg, NodePgSession, NodePgTransaction } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { COMMIT_WITH, type CommitWith, type Compiled, type Db, type RawQuery, sqlLiteral, type StorageKind } from '../platform/db';
import { primeVectorSessions, VECTOR_SESSION_SETTINGS } from '../memory/vector-search';
import { loadMigrations, migrate } from './migrate';
import { DurableNodeFS, durableStartParams } from './pglite-durable';

export { sqlLiteral } from '../platform/db';

const sessionSettingsSql = () => Object.entries(VECTOR_SESSION_SETTINGS).map(([name, value]) => `SET ${name} = ${value};`).join(' ');

export interface Database {
  db: Db;
  query: RawQuery;
  storage: StorageKind;
  migrate(): Promise<string[]>;
  close(): Promise<void>;
}

let statements = 0; // names unique in the process, so two wrappers of one client never collide

/**
 * PGlite's `query` sends six protocol messages and parses and plans the statement every time,
 * which costs more than running the hot path's small statements. This runs each distinct text as
 * a server-side prepared statement (`PREPARE` once, then `EXECUTE` with literal parameters over the
 * simple protocol: one message). Prepared statements live as long as the PGlite session; past
 * `maxPrepared` texts, new ones run unprepared rather than evicting (an `EXECUTE` already queued
 * for an evicted name would fail).
 */
export function preparedQuery(client: Pick<PGlite, 'query' | 'exec'>, maxPrepared = 32): RawQuery {
  const names = new Map<string, Promise<string>>();
  return async <T>(text: string, params: unknown[]) => {
    let name = names.get(text);
    if (!name) {
      if (names.size >= maxPrepared) return (await client.query<T>(text, params)).rows;
      const id = `engram_q${statements++}`;
      name = client.exec(`PREPARE ${id} AS ${text}`).then(() => id);
      names.set(text, name);
      name.catch(() => names.delete(text));
    }
    const args = params.length ? `(${params.map(sqlLiteral).join(', ')})` : '';
    const [result] = await client.exec(`EXECUTE ${await name}${args}`);
    return result.rows as T[];
  };
}

/**
 * Embedded PGlite with pgvector, persisted in `dataDir` (or `memory://`), or restored from a dump.
 * A directory on disk gets durable commits (fsync on, see `pglite-durable.ts`) unless `durable` is false.
 */
export async function openPglite(opts: { dataDir?: string; loadDataDir?: Blob | File; durable?: boolean }): Promise<Database & { client: PGlite }> {
  const onDisk = Boolean(opts.dataDir && !opts.dataDir.startsWith('memory://'));
  if (onDisk) await mkdir(opts.dataDir!, { recursive: true });
  const durable = onDisk && opts.durable !== false && !opts.dataDir!.includes('://');
  const client = await PGlite.create({
    dataDir: durable ? undefined : opts.dataDir,
    fs: durable ? new DurableNodeFS(opts.dataDir!) : undefined,
    startParams: durable ? durableStartParams : undefined,
    loadDataDir: opts.loadDataDir,
    extensions: { vector },
  });
  await client.exec(sessionSettingsSql());
  const db = drizzlePglite(client) as unknown as Db;
  primeVectorSessions(db);
  return {
    client,
    db,
    query: preparedQuery(client),
    storage: 'embedded',
    migrate: async () => migrate({ query: (t, p) => client.query(t, p), exec: (t) => client.exec(t) }, await loadMigrations()),
    close: () => client.close(),
  };
}

/**
 * Any Postgres >= 15 with pgvector, through a pool shared by the process. A connection the server
 * drops (pg_terminate_backend, a restart, a pooler's idle timeout) emits `error` on its client,
 * idle or checked out; without a listener that would end the process. Here it is reported to
 * `onConnectionError`, the client is discarded, and the pool connects afresh on the next query;
 * while the database is away, a connection attempt fails after `connectionTimeoutMillis` instead of
 * waiting forever, and the request answers 503 (`shared/platform/unavailable.ts`). A database that
 * is down refuses at once; the timeout also bounds the wait for a free client of a busy pool, so it
 * is long enough for a burst: with the Redis gate, hundreds of writes admitted in one tick queue for
 * the pool together (5 s turned a 520-write burst on a pool of 5 into 503s).
 */
export function openPostgres(url: string, max = 10, opts: { onConnectionError?: (err: Error) => void } = {}): Database {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    connectionTimeoutMillis: 30_000,
    keepAlive: true,
    // Before the connection is handed out: its session's vector search defaults.
    onConnect: (client) => client.query(sessionSettingsSql()),
  });
  pool.on('connect', (client) => client.on('error', (err) => opts.onConnectionError?.(err)));
  pool.on('error', () => undefined); // an idle client's error: already reported by its own listener
  const db = drizzlePg(pool) as unknown as Db;
  transactionsThatCommitWithTheirLastStatement(db, pool);
  primeVectorSessions(db);
  return {
    db,
    query: async <T>(text: string, params: unknown[]) => (await pool.query(text, params)).rows as T[],
    storage: 'postgres',
    migrate: async () => {
      const client = await pool.connect();
      try {
        return await migrate(
          { query: (t, p) => client.query(t, p as unknown[]) as never, exec: (t) => client.query(t) },
          await loadMigrations(),
        );
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}

/** Statements a connection keeps prepared for sending with BEGIN or COMMIT, at most (their texts come from a few fixed shapes). */
const MAX_PREPARED_STATEMENTS = 32;
/**
 * Parameters larger than this (as literals) go the usual way: escaping and parsing a literal costs
 * more than binding it, and a batch of 100 stores (a 100 KB tail) ran 4-10% slower with them inline.
 */
const MAX_LITERALS = 16_384;

type QueryConfig = { text: string; rowMode?: 'array'; types?: unknown };

/**
 * A statement as it can travel in one simple-protocol message with BEGIN or COMMIT: without
 * parameters, its text; with them, `EXECUTE name(literals)`, the text prepared once per connection
 * (SQL PREPARE: a prepared statement belongs to the session, a rollback does not undo it). Null
 * when it cannot: a parameter with no literal form, literals past MAX_LITERALS, the connection's
 * quota of prepared texts spent, or a text PREPARE refuses (it runs the usual way and fails there
 * if it is wrong).
 */
async function inOneMessage(client: pg.PoolClient, names: Map<string, string>, text: string, params: readonly unknown[]): Promise<string | null> {
  if (!params.length) return text;
  let name = names.get(text);
  if (!name && names.size >= MAX_PREPARED_STATEMENTS) return null;
  let args: string;
  try {
    args = `(${params.map(sqlLiteral).join(', ')})`;
  } catch {
    return null;
  }
  if (args.length > MAX_LITERALS) return null;
  if (!name) {
    const id = `engram_c${names.size}`;
    if (!(await client.query(`PREPARE ${id} AS ${text}`).then(() => true, () => false))) return null;
    names.set(text, (name = id));
  }
  return `EXECUTE ${name}${args}`;
}

/**
 * drizzle's transactions on the pool, two round trips shorter: BEGIN goes out with the first
 * statement and COMMIT with the last (`COMMIT_WITH`, shared/platform/db.ts), each pair as one
 * message. Every round trip saved is a send and a wake-up on both sides, about a quarter of a
 * millisecond of CPU each on two cores. And a store's last statement takes the tenant's audit chain
 * head: with its COMMIT, the head is held while it runs and commits, not also while its answer
 * travels back, waits for this process's event loop, and COMMIT travels out.
 *
 * Statements the handle gets while the first is on its way queue behind it, in order; anything it
 * is asked to run after the commit fails loudly instead of running outside the transaction. With a
 * transaction config (isolation level), drizzle's own transaction runs.
 */
function transactionsThatCommitWithTheirLastStatement(db: Db, pool: pg.Pool) {
  const internals = db as unknown as { dialect: unknown; session: { options: unknown }; transaction: Db['transaction'] };
  const drizzleTransaction = internals.transaction.bind(db);
  const prepared = new WeakMap<pg.PoolClient, Map<string, string>>();
  type Session = ConstructorParameters<typeof NodePgTransaction>[1];
  type Dialect = ConstructorParameters<typeof NodePgTransaction>[0];
  internals.transaction = (async (fn: (tx: never) => Promise<unknown>, config?: unknown) => {
    if (config) return drizzleTransaction(fn as never, config as never);
    const client = await pool.connect();
    let names = prepared.get(client);
    if (!names) prepared.set(client, (names = new Map()));
    /** Settles once BEGIN and the first statement are queued on the client; null before the first statement. */
    let first: Promise<void> | null = null;
    let open = false; // BEGIN has been sent
    let committed = false;
    const query = (config: QueryConfig, values?: unknown[]): Promise<unknown> => {
      if (committed) return Promise.reject(new Error('this transaction has already committed with its last statement'));
      if (first) return first.then(() => client.query(config as never, values));
      let queued!: () => void;
      first = new Promise((resolve) => (queued = resolve));
      return (async () => {
        try {
          const statement = await inOneMessage(client, names, config.text, values ?? []);
          open = true;
          if (!statement) {
            client.query('BEGIN').catch(() => undefined); // its failure fails the statement queued after it
            const result = client.query(config as never, values);
            queued();
            return await result;
          }
          const results = client.query({ text: `BEGIN; ${statement}`, rowMode: config.rowMode, types: config.types } as never) as unknown as Promise<pg.QueryResult[]>;
          queued();
          return (await results)[1];
        } finally {
          queued();
        }
      })();
    };
    const session = new NodePgSession({ query } as never, internals.dialect as Dialect, undefined, internals.session.options as never);
    const tx = new NodePgTransaction(internals.dialect as Dialect, session as unknown as Session, undefined);
    const commitWith: CommitWith = async (compiled: Compiled) => {
      await first;
      const statement = await inOneMessage(client, names, compiled.sql, compiled.params);
      if (!statement) return null;
      const alone = !open; // nothing ran before it: BEGIN goes too
      open = true;
      const results = (await client.query(alone ? `BEGIN; ${statement}; COMMIT` : `${statement}; COMMIT`)) as unknown as pg.QueryResult[];
      committed = true;
      return results[alone ? 1 : 0].rows;
    };
    (tx as unknown as { [COMMIT_WITH]: CommitWith })[COMMIT_WITH] = commitWith;
    let broken: Error | undefined;
    try {
      const result = await fn(tx as never);
      await first;
      if (open && !committed) await client.query('COMMIT');
      return result;
    } catch (err) {
      // After a failed `EXECUTE ...; COMMIT` the transaction is aborted, or ended if COMMIT itself
      // failed: ROLLBACK ends the first and is a no-op for the second.
      await first;
      if (open && !committed) await client.query('ROLLBACK').catch((e: Error) => (broken = e));
      throw err;
    } finally {
      client.release(broken);
    }
  }) as Db['transaction'];
}
