import { mkdir } from 'node:fs/promises';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import * as schema from '../../schema';
import type { Db, RawQuery, StorageKind } from '../db';
import { loadMigrations, migrate } from './migrate';

export interface Database {
  db: Db;
  query: RawQuery;
  storage: StorageKind;
  migrate(): Promise<string[]>;
  close(): Promise<void>;
}

/** Embedded PGlite with pgvector, persisted in `dataDir` (or `memory://`), or restored from a dump. */
export async function openPglite(opts: { dataDir?: string; loadDataDir?: Blob | File }): Promise<Database & { client: PGlite }> {
  if (opts.dataDir && !opts.dataDir.startsWith('memory://')) await mkdir(opts.dataDir, { recursive: true });
  const client = await PGlite.create({ dataDir: opts.dataDir, loadDataDir: opts.loadDataDir, extensions: { vector } });
  return {
    client,
    db: drizzlePglite(client, { schema }) as unknown as Db,
    query: async <T>(text: string, params: unknown[]) => (await client.query<T>(text, params)).rows,
    storage: 'embedded',
    migrate: async () => migrate({ query: (t, p) => client.query(t, p), exec: (t) => client.exec(t) }, await loadMigrations()),
    close: () => client.close(),
  };
}

/** Any Postgres >= 15 with pgvector, through a pool shared by the process. */
export function openPostgres(url: string, max = 10): Database {
  const pool = new pg.Pool({ connectionString: url, max });
  return {
    db: drizzlePg(pool, { schema }) as unknown as Db,
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
