import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { openPglite, openPostgres } from '../shared/node/database';

/**
 * Runs once per test run. Embedded: migrate one in-memory PGlite and dump it, so each test file
 * restores a ready database in about half a second. Integration: migrate the real database once.
 */
export default async function setup(project: TestProject) {
  const url = process.env.TEST_DATABASE_URL;
  if (url) {
    const database = openPostgres(url, 1);
    await database.migrate();
    await database.close();
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

declare module 'vitest' {
  export interface ProvidedContext {
    pgliteSnapshot: string;
  }
}
