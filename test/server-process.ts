import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';

/** The real Node entry point as a child process, for tests that need sockets, signals or a restart. */
const root = new URL('..', import.meta.url).pathname;

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface ServerProcess {
  proc: ChildProcess;
  base: string;
  port: number;
  /** What the process printed (the last `keepOutput` characters). */
  output: () => string;
}

/**
 * Starts `functions/node.ts` the way `npm start` does, on a free loopback port, with the caller's
 * environment added, and waits until `/healthz` answers (or the process exits: that throws with
 * its output).
 */
export async function startServer(env: Record<string, string>, opts: { timeoutMs?: number; keepOutput?: number } = {}): Promise<ServerProcess> {
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const keep = opts.keepOutput ?? 200_000;
  let out = '';
  const proc = spawn(process.execPath, ['--import', 'tsx', 'functions/node.ts'], {
    cwd: root,
    env: { ...process.env, PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const append = (d: Buffer) => (out = (out + d).slice(-keep));
  proc.stdout!.on('data', append);
  proc.stderr!.on('data', append);
  const server = { proc, port, base: `http://127.0.0.1:${port}`, output: () => out };
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`server exited ${proc.exitCode}: ${out}`);
    if (
      await fetch(`${server.base}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return server;
    await new Promise((r) => setTimeout(r, 200));
  }
  proc.kill('SIGKILL');
  throw new Error(`server did not start: ${out}`);
}

/** Stops the process with `signal` (SIGTERM: a clean shutdown; SIGKILL: a crash) and waits for its exit. */
export async function stopServer(server: ServerProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (server.proc.exitCode !== null || server.proc.signalCode !== null) return;
  const exited = new Promise((res) => server.proc.once('exit', res));
  server.proc.kill(signal);
  await exited;
}
