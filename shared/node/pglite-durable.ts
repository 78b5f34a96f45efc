import { fsyncSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { NodeFS } from '@electric-sql/pglite/nodefs';

/**
 * PGlite with commits that survive a power loss, not only a process kill.
 *
 * By default PGlite starts Postgres with `-F` (fsync off), and even with fsync on, its Emscripten
 * file system for Node (NODEFS) has no `fsync` operation and `fdatasync` is a no-op: Postgres'
 * flushes never reach the disk. Here the data directory is mounted through NODEFS with an `fsync`
 * that calls the real `fsync(2)` on the file, and Postgres runs with fsync on and
 * `wal_sync_method=fsync` (the method that goes through that operation), so a commit returns after
 * its WAL is on disk and checkpoints flush data files before WAL is recycled: the same protocol as
 * a regular Postgres.
 */
export class DurableNodeFS extends NodeFS {
  /** How many flushes reached the disk (benchmarks and tests read it). */
  syncs = 0;

  override async init(pg: PGlite, opts: Parameters<NodeFS['init']>[1]) {
    const { emscriptenOpts } = await super.init(pg, opts);
    return {
      emscriptenOpts: {
        ...emscriptenOpts,
        preRun: [
          ...(emscriptenOpts.preRun ?? []),
          (mod: { FS: { filesystems: { NODEFS?: { stream_ops?: Record<string, unknown> } } } }) => {
            const ops = mod.FS.filesystems.NODEFS?.stream_ops;
            if (!ops) throw new Error('PGlite: NODEFS stream operations not found; cannot make commits durable');
            ops.fsync = (stream: { nfd?: number }) => {
              if (typeof stream.nfd === 'number') {
                fsyncSync(stream.nfd);
                this.syncs++;
              }
              return 0;
            };
          },
        ],
      },
    };
  }
}

/** PGlite's own start parameters, with fsync on and the WAL flushed through `fsync`. */
export const durableStartParams = [...PGlite.defaultStartParams.filter((p) => p !== '-F'), '-c', 'wal_sync_method=fsync'];
