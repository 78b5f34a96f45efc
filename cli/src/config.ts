import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { UsageError } from './exit.js';

/** The port `npm start` listens on unless PORT says otherwise (functions/node.ts). */
export const DEFAULT_URL = 'http://127.0.0.1:8787';

export interface StoredConfig {
  api_key?: string;
  url?: string;
}

export interface GlobalFlags {
  apiKey?: string;
  url?: string;
  json?: boolean;
}

/** `$XDG_CONFIG_HOME/engram/config.json`, `~/.config/engram/config.json` without it. */
export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME || join(homedir(), '.config');
  return join(base, 'engram', 'config.json');
}

export async function readConfig(path = configPath()): Promise<StoredConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw err;
  }
  try {
    const parsed = JSON.parse(text) as unknown;
    return parsed && typeof parsed === 'object' ? (parsed as StoredConfig) : {};
  } catch {
    throw new UsageError(`${path} is not valid JSON; run \`engram login\` again`);
  }
}

/** Writes the file readable by its owner only: it holds an API key. */
export async function writeConfig(config: StoredConfig, path = configPath()): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  await writeFile(path, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  // writeFile's mode applies only when it creates the file; an older file keeps its bits otherwise.
  await chmod(path, 0o600);
}

export interface Connection {
  url: string;
  apiKey: string | undefined;
}

/** Flags first, then ENGRAM_API_KEY / ENGRAM_URL, then the config file, then the local default URL. */
export async function resolveConnection(flags: GlobalFlags, env: NodeJS.ProcessEnv = process.env): Promise<Connection> {
  const needFile = (!flags.apiKey && !env.ENGRAM_API_KEY) || (!flags.url && !env.ENGRAM_URL);
  const file = needFile ? await readConfig(configPath(env)) : {};
  const url = flags.url || env.ENGRAM_URL || file.url || DEFAULT_URL;
  const apiKey = flags.apiKey || env.ENGRAM_API_KEY || file.api_key;
  return { url: url.replace(/\/+$/, ''), apiKey };
}

export function requireKey(connection: Connection): string {
  if (!connection.apiKey) throw new UsageError('no API key: run `engram login`, or pass --api-key, or set ENGRAM_API_KEY');
  return connection.apiKey;
}
