import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openPglite } from '../shared/node/database';
import { DurableNodeFS } from '../shared/node/pglite-durable';
import { parseConfig } from '../shared/platform/contract/config';

/**
 * The embedded store on disk acknowledges a commit only once it is flushed to the disk: Postgres
 * runs with fsync on, and its flushes reach fsync(2) (PGlite's own Node file system drops them).
 */
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function dataDir() {
  const dir = await mkdtemp(join(tmpdir(), 'engram-durable-'));
  dirs.push(dir);
  return dir;
}

const setting = async (db: Awaited<ReturnType<typeof openPglite>>, name: string) =>
  (await db.client.query<{ setting: string }>('SELECT setting FROM pg_settings WHERE name = $1', [name])).rows[0].setting;

describe('embedded storage durability', () => {
  it('is the default: fsync on, and every commit reaches fsync(2); data is there after a reopen', async () => {
    expect(parseConfig({}).PGLITE_FSYNC).toBe(true);
    const dir = await dataDir();
    const db = await openPglite({ dataDir: dir });
    expect(await setting(db, 'fsync')).toBe('on');
    expect(await setting(db, 'wal_sync_method')).toBe('fsync');
    expect(db.client.fs).toBeInstanceOf(DurableNodeFS);
    const fs = db.client.fs as DurableNodeFS;
    await db.client.exec('CREATE TABLE t (n int)');
    for (let n = 1; n <= 3; n++) {
      const before = fs.syncs;
      await db.client.query('INSERT INTO t VALUES ($1)', [n]);
      expect(fs.syncs).toBeGreaterThan(before); // the commit's WAL was flushed before the insert returned
    }
    await db.close();
    const reopened = await openPglite({ dataDir: dir });
    expect((await reopened.client.query<{ c: number }>('SELECT count(*)::int AS c FROM t')).rows[0].c).toBe(3);
    await reopened.close();
  }, 60_000);

  it('PGLITE_FSYNC=0 keeps PGlite’s own setting (fsync off); memory:// has no disk to flush', async () => {
    expect(parseConfig({ PGLITE_FSYNC: '0' }).PGLITE_FSYNC).toBe(false);
    const fast = await openPglite({ dataDir: await dataDir(), durable: false });
    expect(await setting(fast, 'fsync')).toBe('off');
    await fast.close();
    const memory = await openPglite({ dataDir: 'memory://' });
    expect(memory.client.fs).not.toBeInstanceOf(DurableNodeFS);
    await memory.close();
  }, 60_000);
});
