import type { Command } from 'commander';
import { requireKey } from '../config.js';
import { action } from '../context.js';

export function registerMcpCommand(program: Command): void {
  program
    .command('mcp')
    .description("A stdio MCP server that forwards to the server's /mcp with your key, for hosts that only start stdio servers")
    .addHelpText(
      'after',
      '\nReads JSON-RPC messages from stdin, one per line, and writes the answers to stdout; nothing else goes to\nstdout. In a host configuration: {"command": "engram", "args": ["mcp"]} (the key comes from `engram login`\nor ENGRAM_API_KEY).',
    )
    .action(
      action(async (ctx) => {
        // The MCP packages take longer to load than the rest of the CLI together: only this command pays.
        const { runMcpBridge } = await import('../mcp-bridge.js');
        await runMcpBridge({ url: ctx.connection.url, apiKey: requireKey(ctx.connection), report: (text) => ctx.output.note(text) });
      }),
    );
}
