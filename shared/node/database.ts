import { mkdir } from 'node:fs/promises';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { drizzle as drizzlePg, NodePgSession, NodePgTransaction } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { context, trace } from '@opentelemetry/api';
import { inSpan } from '../platform/http/tracing';
import { type Db, type RawQuery, sqlLiteral, type StorageKind } from '../platform/data/db';
import { installShortcuts } from '../platform/data/driver';
import { primeVectorSessions, VECTOR_SESSION_SETTINGS } from '../memory/vector-search';
import { loadMigrations, migrate } from './migrate';
import { DurableNodeFS, durableStartParams } from './pglite-durable';

export { sqlLiteral } from '../platform/data/db';

const sessionSettingsSql = () =>
  Object.entries(VECTOR_SESSION_SETTINGS)
    .map(([name, value]) => `SET ${name} = ${value};`)
    .join(' ');

export interface Database {
  db: Db;
  query: RawQuery;
  storage: StorageKind;
  /** Postgres: the pool's connections and the queries waiting for one (metrics). */
  poolStats?(): { total: number; idle: number; waiting: number };
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
 * `shortcuts: false` (DB_DRIVER_SHORTCUTS=off): drizzle's own ways only (shared/platform/data/driver/).
 */
export async function openPglite(opts: {
  dataDir?: string;
  loadDataDir?: Blob | File;
  durable?: boolean;
  shortcuts?: boolean;
}): Promise<Database & { client: PGlite }> {
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
  const shortcuts = opts.shortcuts ?? true;
  installShortcuts(db, { kind: 'pglite', client }, shortcuts);
  primeVectorSessions(db);
  return {
    client,
    db,
    query: shortcuts ? preparedQuery(client) : async <T>(text: string, params: unknown[]) => (await client.query<T>(text, params)).rows,
    storage: 'embedded',
    migrate: async () => migrate({ query: (t, p) => client.query(t, p), exec: (t) => client.exec(t) }, await loadMigrations()),
    close: () => client.close(),
  };
}

/** The statement's first keyword (SELECT, INSERT, WITH, ...): never its text, which can carry values. */
const operationOf = (query: unknown): string => {
  const text = typeof query === 'string' ? query : (query as { text?: unknown } | null)?.text;
  return typeof text === 'string' ? (/^\s*(\w+)/.exec(text)?.[1]?.toUpperCase() ?? 'QUERY') : 'QUERY';
};

/** Under a request's span (an app with tracing), each query of the client in a `db.query` span of its own. */
function traceQueries(client: pg.PoolClient) {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    const first = args[0] as { submit?: unknown } | undefined;
    // Callback and submittable (cursor) forms pass as they are.
    if (!trace.getSpan(context.active()) || typeof args[args.length - 1] === 'function' || typeof first?.submit === 'function') return query(...args);
    return inSpan('db.query', { 'db.system.name': 'postgresql', 'db.operation.name': operationOf(first) }, () => query(...args) as Promise<unknown>);
  };
}

/**
 * Any Postgres >= 15 with pgvector, through a pool shared by the process. A connection the server
 * drops (pg_terminate_backend, a restart, a pooler's idle timeout) emits `error` on its client,
 * idle or checked out; without a listener that would end the process. Here it is reported to
 * `onConnectionError`, the client is discarded, and the pool connects afresh on the next query;
 * while the database is away, a connection attempt fails after `connectionTimeoutMillis` instead of
 * waiting forever, and the request answers 503 (`shared/platform/http/unavailable.ts`). A database that
 * is down refuses at once; the timeout also bounds the wait for a free client of a busy pool, so it
 * is long enough for a burst: with the Redis gate, hundreds of writes admitted in one tick queue for
 * the pool together, and a short timeout turns such a burst into 503s.
 */
export function openPostgres(url: string, max = 10, opts: { onConnectionError?: (err: Error) => void; shortcuts?: boolean } = {}): Database {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    connectionTimeoutMillis: 30_000,
    keepAlive: true,
    // Before the connection is handed out: its session's vector search defaults.
    onConnect: (client) => client.query(sessionSettingsSql()),
  });
  pool.on('connect', (client) => {
    client.on('error', (err) => opts.onConnectionError?.(err));
    traceQueries(client);
  });
  pool.on('error', () => undefined); // an idle client's error: already reported by its own listener
  const db = drizzlePg(pool) as unknown as Db;
  installShortcuts(db, { kind: 'pool', pool, Session: NodePgSession, Transaction: NodePgTransaction, prepare: true }, opts.shortcuts ?? true);
  primeVectorSessions(db);
  return {
    db,
    query: async <T>(text: string, params: unknown[]) => (await pool.query(text, params)).rows as T[],
    storage: 'postgres',
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    migrate: async () => {
      const client = await pool.connect();
      try {
        return await migrate({ query: (t, p) => client.query(t, p as unknown[]) as never, exec: (t) => client.query(t) }, await loadMigrations());
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}
