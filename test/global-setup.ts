import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { openPglite, openPostgres } from '../shared/node/database';

/**
 * Runs once per test run. Embedded: migrate one in-memory PGlite and dump it, so each test file
 * restores a ready database in about half a second. Integration: migrate the real database once and
 * copy it for each worker (`test/integration-worker.ts` points a worker's files at its copy).
 */
export default async function setup(project: TestProject) {
  const url = process.env.TEST_DATABASE_URL;
  if (url) {
    const database = openPostgres(url, 1);
    await database.migrate();
    await database.close();
    await copyPerWorker(url, project.config.maxWorkers ?? 1);
    project.provide('integrationServers', { databaseUrl: url, redisUrl: process.env.TEST_REDIS_URL ?? '' });
    return;
  }
  const database = await openPglite({ dataDir: 'memory://' });
  await database.migrate();
  const dump = await database.client.dumpDataDir('none');
  const dir = await mkdtemp(join(tmpdir(), 'engram-test-'));
  const file = join(dir, 'snapshot.tar');
  await writeFile(file, Buffer.from(await dump.arrayBuffer()));
  await database.close();
  project.provide('pgliteSnapshot', file);
  // The snapshot is 40 MB; leave nothing behind.
  return () => rm(dir, { recursive: true, force: true });
}

/**
 * The integration files run side by side, a worker each. Each worker gets its own copy of the
 * migrated database (and its own Redis database number), so one file's maintenance, rollbacks,
 * triggers and fixed windows reach only the files of its own worker, which run one at a time.
 */
async function copyPerWorker(url: string, workers: number) {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    const template = new URL(url).pathname.slice(1);
    for (let id = 1; id <= workers; id++) {
      const copy = workerDatabaseName(template, id);
      await admin.query(`DROP DATABASE IF EXISTS ${copy} WITH (FORCE)`);
      await admin.query(`CREATE DATABASE ${copy} TEMPLATE ${template}`);
    }
  } finally {
    await admin.end();
  }
}

export function workerDatabaseName(template: string, workerId: number): string {
  return `${template}_w${workerId}`;
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgliteSnapshot: string;
    integrationServers: { databaseUrl: string; redisUrl: string };
  }
}
