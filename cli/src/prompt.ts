import { createInterface } from 'node:readline/promises';
import { Writable } from 'node:stream';
import { UsageError } from './exit.js';

/** Questions need a person at a terminal; a script gets a usage error instead of a hang. */
export function requireTerminal(what: string): void {
  if (!process.stdin.isTTY || !process.stderr.isTTY) throw new UsageError(`${what} needs a terminal (stdin is not a TTY)`);
}

/** Asks on stderr and reads one line; with `hidden`, what is typed is not echoed (an API key). */
export async function ask(question: string, options: { hidden?: boolean } = {}): Promise<string> {
  let muted = false;
  // Readline echoes through `output`; swallowing the echo after the question hides the answer.
  const output = new Writable({
    write(chunk, _encoding, done) {
      if (!muted) process.stderr.write(chunk);
      done();
    },
  });
  const rl = createInterface({ input: process.stdin, output, terminal: true });
  try {
    const answer = rl.question(question);
    muted = Boolean(options.hidden);
    return (await answer).trim();
  } finally {
    rl.close();
    if (options.hidden) process.stderr.write('\n');
  }
}
