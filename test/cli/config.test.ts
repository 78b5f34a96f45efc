import { chmod, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configPath, DEFAULT_URL, readConfig, resolveConnection, writeConfig } from '../../cli/src/config';
import { maskKey } from '../../cli/src/output';

/** Where the CLI takes its key and URL from: flags, then ENGRAM_* variables, then the config file. */
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'engram-cli-config-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('CLI configuration', () => {
  it('prefers flags to the environment, and the environment to the file; the URL defaults to npm start', async () => {
    const env = { XDG_CONFIG_HOME: dir };
    expect(configPath(env)).toBe(join(dir, 'engram', 'config.json'));
    expect(await resolveConnection({}, env)).toEqual({ url: DEFAULT_URL, apiKey: undefined });

    await writeConfig({ url: 'http://file.test/', api_key: 'sk_file' }, configPath(env));
    expect(await resolveConnection({}, env)).toEqual({ url: 'http://file.test', apiKey: 'sk_file' });
    const withEnv = { ...env, ENGRAM_URL: 'http://env.test', ENGRAM_API_KEY: 'sk_env' };
    expect(await resolveConnection({}, withEnv)).toEqual({ url: 'http://env.test', apiKey: 'sk_env' });
    expect(await resolveConnection({ url: 'http://flag.test', apiKey: 'sk_flag' }, withEnv)).toEqual({ url: 'http://flag.test', apiKey: 'sk_flag' });
  });

  it('keeps the file readable by its owner only, even one that existed with wider bits', async () => {
    const path = join(dir, 'wide', 'config.json');
    await writeConfig({}, path);
    await chmod(path, 0o644);
    await writeConfig({ api_key: 'sk_x' }, path);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(await readConfig(path)).toEqual({ api_key: 'sk_x' });
    expect(await readConfig(join(dir, 'missing.json'))).toEqual({});
  });

  it('masks a key down to its prefix and last four characters', () => {
    expect(maskKey('sk_live_0123456789abcdef')).toBe('sk_…cdef');
    expect(maskKey('0123456789')).toBe('…6789');
  });
});
