import { execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

/** The built `engram` binary (sdk/package.json's bin), run the way a person runs it. */
const root = new URL('../..', import.meta.url).pathname;
export const cliMain = join(root, 'sdk/dist/cli/main.js');

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * Builds sdk/dist as `npm run sdk:build` does when it is missing or older than a file of sdk/src (CI builds
 * it before the tests; a developer's edit is picked up without a manual build).
 */
export async function buildCliIfStale(): Promise<void> {
  if (existsSync(cliMain) && statSync(cliMain).mtimeMs >= newestSource(join(root, 'sdk/src'))) return;
  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  // As `npm run sdk:build`: the client, then the CLI with Node's types.
  for (const project of ['sdk', 'sdk/tsconfig.cli.json']) await promisify(execFile)(process.execPath, [tsc, '-p', project], { cwd: root });
}

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `engram …args` with `env` on top of a clean environment: no ENGRAM_* variable of the caller
 * leaks in, and XDG_CONFIG_HOME is the test's own.
 */
export function runCli(args: string[], env: Record<string, string>, opts: { input?: string; timeoutMs?: number } = {}): Promise<CliResult> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('ENGRAM_') && name !== 'NO_COLOR'));
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [cliMain, ...args], { cwd: root, env: { ...base, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d) => (stdout += d));
    proc.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => proc.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
    proc.once('error', reject);
    proc.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    proc.stdin.end(opts.input ?? '');
  });
}
