import { execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

/** The built `engram` binary (cli/package.json's bin), run the way a person runs it. */
const root = new URL('../..', import.meta.url).pathname;
export const cliMain = join(root, 'cli/dist/main.js');

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * Builds sdk/dist and cli/dist as `npm run sdk:build && npm run cli:build` do when the binary is missing or
 * older than a file of sdk/src or cli/src (CI builds them before the tests; a developer's edit is picked up
 * without a manual build).
 */
export async function buildCliIfStale(): Promise<void> {
  const newest = Math.max(newestSource(join(root, 'sdk/src')), newestSource(join(root, 'cli/src')));
  if (existsSync(cliMain) && statSync(cliMain).mtimeMs >= newest) return;
  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  // The client first: the CLI imports it as the package `engram-sdk`, whose types are sdk/dist's.
  for (const project of ['sdk', 'cli']) await promisify(execFile)(process.execPath, [tsc, '-p', project], { cwd: root });
}

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `engram …args` with `env` on top of a clean environment: no ENGRAM_* variable of the caller
 * leaks in, and XDG_CONFIG_HOME is the test's own. With `shell`, runs that bash script instead (a
 * pipeline around the binary), in the same environment.
 */
export function runCli(args: string[], env: Record<string, string>, opts: { input?: string; timeoutMs?: number; shell?: string } = {}): Promise<CliResult> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('ENGRAM_') && name !== 'NO_COLOR'));
  return new Promise((resolve, reject) => {
    const [command, argv] = opts.shell === undefined ? [process.execPath, [cliMain, ...args]] : ['bash', ['-c', opts.shell]];
    const proc = spawn(command, argv, { cwd: root, env: { ...base, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
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
