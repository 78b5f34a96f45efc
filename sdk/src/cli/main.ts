#!/usr/bin/env node
import { createRequire } from 'node:module';
import { Command, CommanderError, Option } from 'commander';
import { EngramError } from '../index.js';
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

/** sdk/package.json, two levels up from both src/cli and dist/cli. */
const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };

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
    '\nExit codes: 0 ok, 1 the API answered an error (or a check failed), 2 usage error.\nConfig: $XDG_CONFIG_HOME/engram/config.json (~/.config/engram/config.json), written by `engram login`.',
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
  const message = err instanceof Error ? err.message : String(err);
  output.note(`engram: ${message}`);
  return EXIT_API_ERROR;
}

buildProgram()
  .parseAsync(process.argv)
  .then(
    () => EXIT_OK,
    (err: unknown) => report(err),
  )
  .then((code) => {
    process.exitCode = code;
  });
