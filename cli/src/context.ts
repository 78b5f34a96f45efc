import type { Command } from 'commander';
import { Engram } from 'engram-sdk';
import { type Connection, type GlobalFlags, requireKey, resolveConnection } from './config.js';
import { Output } from './output.js';

export interface Context {
  flags: GlobalFlags;
  output: Output;
  connection: Connection;
  /** The SDK client with the resolved key; a usage error (exit 2) when there is none. */
  client(): Engram;
}

/** The flags every command takes (`engram --help` lists them). */
function globalFlags(command: Command): GlobalFlags {
  return command.optsWithGlobals() as GlobalFlags;
}

let current: { output: Output; url?: string } | undefined;

/** The output and URL of the command that runs, for reporting its failure with the same masking. */
export function currentCommand(): { output: Output; url?: string } {
  return current ?? { output: new Output(false) };
}

export async function contextFor(command: Command): Promise<Context> {
  const flags = globalFlags(command);
  const output = new Output(Boolean(flags.json));
  current = { output };
  output.hide(flags.apiKey);
  const connection = await resolveConnection(flags);
  current.url = connection.url;
  output.hide(connection.apiKey);
  let client: Engram | undefined;
  return {
    flags,
    output,
    connection,
    client() {
      client ??= new Engram({ apiKey: requireKey(connection), baseUrl: connection.url });
      return client;
    },
  };
}

type Action<Opts> = (ctx: Context, args: string[], opts: Opts) => Promise<void>;

/** Adapts a command body to commander's `(…args, opts, command)` callback. */
export function action<Opts = Record<string, unknown>>(body: Action<Opts>) {
  return async (...received: unknown[]) => {
    const command = received.at(-1) as Command;
    const opts = command.opts() as Opts;
    const args = received.slice(0, -2).flat() as string[];
    await body(await contextFor(command), args, opts);
  };
}
