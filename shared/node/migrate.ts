import { readdir, readFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { join } from 'node:path';

export interface Migration {
  name: string;
  sql: string;
}

/** A single connection that can run multi-statement SQL (PGlite, or a pg client). */
export interface MigrationSession {
  query<T>(text: string, params?: unknown[]): Promise<{ rows: T[] }>;
  exec(text: string): Promise<unknown>;
}

export const MIGRATIONS_DIR = new URL('../../migrations/', import.meta.url);

export async function loadMigrations(dir: URL = MIGRATIONS_DIR): Promise<Migration[]> {
  const path = dir.pathname;
  const files = (await readdir(path)).filter((f) => /^\d{4}_.+\.sql$/.test(f)).sort();
  return Promise.all(files.map(async (name) => ({ name, sql: await readFile(join(path, name), 'utf8') })));
}

/**
 * Applies pending migrations in one transaction under an advisory lock, so several instances
 * starting together apply each file exactly once. drizzle-kit's migrator cannot load pgvector
 * into PGlite and takes no lock, hence this small runner.
 */
export async function migrate(session: MigrationSession, migrations: Migration[]): Promise<string[]> {
  await session.exec('BEGIN');
  try {
    await session.query('SELECT pg_advisory_xact_lock(7261001)');
    await session.exec(
      'CREATE TABLE IF NOT EXISTS engram_migrations (name text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const done = new Map(
      (await session.query<{ name: string; checksum: string }>('SELECT name, checksum FROM engram_migrations')).rows.map((r) => [r.name, r.checksum]),
    );
    const applied: string[] = [];
    for (const m of migrations) {
      const checksum = createHash('sha256').update(m.sql).digest('hex');
      const previous = done.get(m.name);
      if (previous !== undefined) {
        // An applied migration must never change: the database would silently differ from the code.
        if (previous !== checksum) throw new Error(`migration ${m.name} was changed after it was applied; add a new migration instead`);
        continue;
      }
      await session.exec(m.sql);
      await session.query('INSERT INTO engram_migrations (name, checksum) VALUES ($1, $2)', [m.name, checksum]);
      applied.push(m.name);
    }
    await session.exec('COMMIT');
    return applied;
  } catch (err) {
    await session.exec('ROLLBACK').catch(() => undefined);
    throw err;
  }
}
