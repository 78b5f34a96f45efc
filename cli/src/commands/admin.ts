import { type Command, Option } from 'commander';
import { Engram } from 'engram-sdk';
import { configPath, writeConfig } from '../config.js';
import { action } from '../context.js';
import { UsageError } from '../exit.js';
import { maskKey } from '../output.js';

const TIERS = ['free', 'starter', 'pro', 'enterprise'] as const;
type Tier = (typeof TIERS)[number];

export function registerAdminCommands(program: Command): void {
  const admin = program.command('admin').description("Operator commands (the server's ADMIN_TOKEN)");
  const tenants = admin.command('tenants').description('Accounts');
  tenants
    .command('create')
    .description('Create a verified account with its first API key (POST /admin/v1/tenants)')
    .requiredOption('--email <email>', "the account's e-mail")
    .addOption(new Option('--tier <tier>', 'free, starter, pro or enterprise').choices(TIERS))
    .option('--admin-token <token>', 'the operator token (else ENGRAM_ADMIN_TOKEN)')
    .option('--login', "save the new account's key and the URL to the config file, as `engram login` does")
    .addHelpText('after', "\nThe new key is shown masked; --login saves it, --json prints the API's body with it (once: keep it).")
    .action(
      action<{ email: string; tier?: Tier; adminToken?: string; login?: boolean }>(async (ctx, _args, opts) => {
        const token = opts.adminToken || process.env.ENGRAM_ADMIN_TOKEN;
        if (!token) throw new UsageError('no operator token: pass --admin-token or set ENGRAM_ADMIN_TOKEN');
        ctx.output.hide(token);
        const client = new Engram({ apiKey: token, baseUrl: ctx.connection.url });
        const body = await client.admin.createTenant({ email: opts.email, tier: opts.tier });
        if (opts.login) await writeConfig({ url: ctx.connection.url, api_key: body.api_key });
        ctx.output.result(body, () => {
          ctx.output.line(`Created ${body.tenant_id} (${body.tier}) with key ${maskKey(body.api_key)}.`);
          if (opts.login) ctx.output.line(`Saved the key to ${configPath()}.`);
          else ctx.output.line('The key is not shown again: --login saves it, --json prints it.');
        });
      }),
    );
}
