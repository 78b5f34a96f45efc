#!/usr/bin/env node
import { createRequire } from 'node:module';
import { Command, CommanderError, Option } from 'commander';
import { EngramError } from 'engram-sdk';
import { registerAccountCommands } from './commands/account.js';
import { registerAdminCommands } from './commands/admin.js';
import { registerApprovalCommands } from './commands/approvals.js';
import { registerAuditCommands } from './commands/audit.js';
import { registerErasureCommands } from './commands/erasures.js';
import { registerEventCommands } from './commands/events.js';
import { registerMcpCommand } from './commands/mcp.js';
import { registerMemoryCommands } from './commands/memories.js';
import { registerRollbackCommand } from './commands/rollback.js';
import { registerTraceCommands } from './commands/traces.js';
import { registerTransferCommands } from './commands/transfer.js';
import { currentCommand } from './context.js';
import { CheckFailed, EXIT_API_ERROR, EXIT_OK, EXIT_USAGE, UsageError } from './exit.js';

/** cli/package.json, one level up from both src and dist. */
const { version } = createRequire(import.meta.url)('../package.json') as { version: string };

function buildProgram(): Command {
  const program = new Command('engram')
    .version(version)
    .description('The engram command line: memories, change control and approvals from a terminal.')
    .addOption(new Option('--api-key <key>', 'API key (else ENGRAM_API_KEY, else the config file)'))
    .addOption(new Option('--url <url>', 'engram base URL (else ENGRAM_URL, else the config file, else http://127.0.0.1:8787)'))
    .option('--json', "print exactly the API's JSON body on stdout, nothing else")
    .configureHelp({ showGlobalOptions: true, sortSubcommands: false })
    .showHelpAfterError('(add --help for usage)')
    .exitOverride();
  program.addHelpText(
    'after',
    '\nExit codes: 0 ok (also when the reader of stdout closed the pipe), 1 the API answered an error, the server could not be reached or a check failed,\n2 usage or input error (a bad flag or argument, no key, a file that cannot be read or is not JSON).\nConfig: $XDG_CONFIG_HOME/engram/config.json (~/.config/engram/config.json), written by `engram login`.',
  );
  registerAccountCommands(program);
  registerMemoryCommands(program);
  registerTransferCommands(program);
  registerRollbackCommand(program);
  registerAuditCommands(program);
  registerEventCommands(program);
  registerTraceCommands(program);
  registerErasureCommands(program);
  registerApprovalCommands(program);
  registerMcpCommand(program);
  registerAdminCommands(program);
  return program;
}

/**
 * A reader that closed the pipe (`engram --json list | head -1`, `| true`) has what it wanted: the
 * command ends quietly with 0, as `cat` and `git log` do, instead of an EPIPE stack. A closed stderr
 * only loses the notes; the command goes on and its exit code still tells.
 */
function endQuietlyOnClosedPipes(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
    process.exit(EXIT_OK);
  });
  process.stderr.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
  });
}

/** A file the command was given that cannot be read or written (ENOENT, EACCES, EISDIR...): an input error. */
function fileError(err: unknown): string | undefined {
  const e = err as NodeJS.ErrnoException;
  if (!(err instanceof Error) || typeof e.code !== 'string' || typeof e.path !== 'string' || typeof e.syscall !== 'string') return undefined;
  const why: Record<string, string> = { ENOENT: 'no such file', EACCES: 'permission denied', EISDIR: 'is a directory', ENOTDIR: 'not a directory' };
  return `${e.path}: ${why[e.code] ?? e.code}`;
}

/** Maps what went wrong to the exit codes of `engram --help`, with the key masked in every message. */
function report(err: unknown): number {
  const { output, url } = currentCommand();
  if (err instanceof CommanderError) {
    // commander already printed what went wrong. --help exits 0; a group without its subcommand
    // (`engram audit`) prints its help with exit code 1, a usage error here like a bad flag.
    return err.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
  }
  if (err instanceof EngramError) {
    // No answer at all (status 0): say where the CLI looked, the usual cause is a wrong --url.
    const where = err.status === 0 && url ? `; is engram running at ${url}?` : '';
    output.note(`${err.code}: ${err.message}${where}${err.requestId ? ` (${err.requestId})` : ''}`);
    return EXIT_API_ERROR;
  }
  if (err instanceof UsageError) {
    output.note(`engram: ${err.message}`);
    return EXIT_USAGE;
  }
  if (err instanceof CheckFailed) {
    output.note(err.message);
    return EXIT_API_ERROR;
  }
  const file = fileError(err);
  if (file) {
    output.note(`engram: ${file}`);
    return EXIT_USAGE;
  }
  const message = err instanceof Error ? err.message : String(err);
  output.note(`engram: ${message}`);
  return EXIT_API_ERROR;
}

endQuietlyOnClosedPipes();
buildProgram()
  .parseAsync(process.argv)
  .then(
    () => EXIT_OK,
    (err: unknown) => report(err),
  )
  .then((code) => {
    process.exitCode = code;
  });
