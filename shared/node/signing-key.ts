import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Config } from '../platform/contract/config';
import type { Logger } from '../platform/data/log';
import { configuredSigningKey, generateSigningKeyPem, importSigningKey, lazySigningKey, type SigningKeySource } from '../platform/contract/trace-signing';

export const KEY_FILE = 'trace-signing-key.pem';

/**
 * Where a Node deployment's trace signing key comes from:
 * - `TRACE_SIGNING_KEY` (PKCS#8 PEM) when set: the only choice that works for several instances
 *   sharing one Postgres, since all of them must sign with one key;
 * - else a key generated on first start and kept in `DATA_DIR/trace-signing-key.pem`, readable by
 *   the owner only (a looser file is tightened, with a warning);
 * - else, with an in-memory data directory (tests), a key generated on first use that dies with
 *   the process. Traces it signed stay verifiable: their public key is stored with them.
 * A key file is read or generated right away, so the first completion does not wait for it.
 */
export function nodeSigningKey(config: Config, log: Logger, opts: { sharedDatabase: boolean }): SigningKeySource {
  if (config.TRACE_SIGNING_KEY) return eager(configuredSigningKey(config.TRACE_SIGNING_KEY), log);
  if (config.DATA_DIR.includes('://')) return lazySigningKey(async () => importSigningKey(await generateSigningKeyPem()));
  if (opts.sharedDatabase) {
    log.warn(
      'TRACE_SIGNING_KEY is not set: traces are signed with a key generated in DATA_DIR; instances sharing this database must share one key (set TRACE_SIGNING_KEY)',
    );
  }
  const path = join(config.DATA_DIR, KEY_FILE);
  return eager(
    lazySigningKey(async () => importSigningKey(await keptSigningKeyPem(path, log))),
    log,
  );
}

function eager(source: SigningKeySource, log: Logger): SigningKeySource {
  source().catch((err: Error) => log.error('trace signing key unusable; completing traces answers 503', { error: err.message }));
  return source;
}

/**
 * The PEM kept at `path`: read (tightened to owner-only if looser), or generated and written there
 * on first use. Also what `npm run worker:dev` hands the local worker, so its traces verify across
 * restarts like a deployment's.
 */
export async function keptSigningKeyPem(path: string, log: Logger): Promise<string> {
  try {
    const { mode } = await stat(path);
    if (mode & 0o077) {
      await chmod(path, 0o600);
      log.warn('trace signing key file was readable by others; tightened to owner-only', { path });
    }
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const pem = await generateSigningKeyPem();
  await mkdir(join(path, '..'), { recursive: true });
  try {
    // `wx`: if another process created the file meanwhile, its key wins and is read back.
    await writeFile(path, pem, { mode: 0o600, flag: 'wx' });
    log.info('trace signing key generated', { path });
    return pem;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return readFile(path, 'utf8');
  }
}
