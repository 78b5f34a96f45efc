import type { Command } from 'commander';
import { Engram } from 'engram-sdk';
import { configPath, writeConfig } from '../config.js';
import { action } from '../context.js';
import { UsageError } from '../exit.js';
import { maskKey } from '../output.js';
import { ask, requireTerminal } from '../prompt.js';

export function registerAccountCommands(program: Command): void {
  program
    .command('login')
    .description('Check an API key against the server and save it with the URL in the config file (mode 0600)')
    .addHelpText(
      'after',
      '\nWithout --api-key or ENGRAM_API_KEY it asks on the terminal for the URL (unless --url or ENGRAM_URL\nsays it; Enter keeps the one shown) and for the key, without echoing it.',
    )
    .action(
      action(async (ctx, _args, _opts) => {
        const { output } = ctx;
        const connection = { ...ctx.connection };
        // A key saved earlier is not a new one to log in with: without --api-key or ENGRAM_API_KEY, ask.
        let apiKey = ctx.flags.apiKey || process.env.ENGRAM_API_KEY;
        if (!apiKey) {
          requireTerminal('asking for the API key (pass --api-key or set ENGRAM_API_KEY)');
          if (!ctx.flags.url && !process.env.ENGRAM_URL) {
            const url = await ask(`engram URL [${connection.url}]: `);
            if (url) connection.url = url.replace(/\/+$/, '');
          }
          apiKey = await ask(`API key for ${connection.url}: `, { hidden: true });
          if (!apiKey) throw new UsageError('no API key given');
        }
        output.hide(apiKey);
        const client = new Engram({ apiKey, baseUrl: connection.url });
        const usage = await client.usage.get();
        const path = configPath();
        await writeConfig({ url: connection.url, api_key: apiKey }, path);
        output.result(usage, () => {
          output.line(`Logged in to ${connection.url} with ${maskKey(apiKey)} (tier ${usage.tier ?? 'unknown'}).`);
          output.line(`Saved to ${path} (readable by you only).`);
        });
      }),
    );

  program
    .command('signup')
    .description('Ask for an account: the server mails a verification token for POST /v1/verify')
    .requiredOption('--email <email>', 'where the verification mail goes')
    .action(
      action<{ email: string }>(async (ctx, _args, opts) => {
        const { output } = ctx;
        // The client needs a bearer token to send; signing up and verifying read none.
        const client = new Engram({ apiKey: 'signup', baseUrl: ctx.connection.url });
        const body = await client.request<{ message?: string }>('POST', '/v1/keys', { body: { email: opts.email } });
        output.result(body, () => output.line(`Check ${opts.email} for a verification token, then: engram verify --email ${opts.email} --token <token>`));
      }),
    );

  program
    .command('verify')
    .description('Turn the mailed verification token into an API key, and save it as `engram login` does')
    .requiredOption('--email <email>', 'the e-mail you signed up with')
    .requiredOption('--token <token>', 'the token from the mail')
    .action(
      action<{ email: string; token: string }>(async (ctx, _args, opts) => {
        const { output, connection } = ctx;
        const client = new Engram({ apiKey: 'signup', baseUrl: connection.url });
        const body = await client.request<{ api_key: string }>('POST', '/v1/verify', { body: { email: opts.email, token: opts.token } });
        output.hide(body.api_key);
        await writeConfig({ url: connection.url, api_key: body.api_key });
        output.result(body, () => output.line(`Verified. Key ${maskKey(body.api_key)} saved to ${configPath()}.`));
      }),
    );
}
