import { sql } from 'drizzle-orm';
import { forgetKeys } from '../../shared/platform/http/auth';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { rows } from '../../shared/platform/data/db';
import { AppError } from '../../shared/platform/contract/errors';
import { requireUnrestricted } from '../../shared/platform/contract/scopes';
import { type Work, write } from '../../shared/platform/data/unit-of-work';
import { eraseWithin } from './service';

/**
 * The account's data beyond its memories, by table and the column naming the tenant. What stays:
 * the audit chain (audit_log, audit_heads), the erasure receipts and tombstones, the tenant row
 * (its e-mail replaced) and its keys, revoked.
 */
const OWNED: readonly [table: string, column: string][] = [
  ['shares', 'owner_tenant_id'],
  ['context_spaces', 'owner_tenant_id'],
  ['memory_entities', 'tenant_id'],
  ['knowledge_triples', 'tenant_id'],
  ['knowledge_entities', 'tenant_id'],
  ['policies', 'tenant_id'],
  ['runtime_interventions', 'tenant_id'],
  ['runtime_checkpoints', 'tenant_id'],
  ['runtime_missions', 'tenant_id'],
  ['runtime_agents', 'tenant_id'],
  ['runtime_capabilities', 'tenant_id'],
  ['action_decisions', 'tenant_id'],
  ['actions', 'tenant_id'],
  ['control_settings', 'tenant_id'],
  ['memory_holds', 'tenant_id'],
  ['webhook_deliveries', 'tenant_id'],
  ['webhooks', 'tenant_id'],
  ['import_sources', 'tenant_id'],
  ['import_lines', 'tenant_id'],
  ['imports', 'tenant_id'],
  ['event_stream_leases', 'tenant_id'],
  ['trace_steps', 'tenant_id'],
  ['traces', 'tenant_id'],
  ['compensation_actions', 'tenant_id'],
  ['compensation_plans', 'tenant_id'],
  ['events', 'tenant_id'],
  ['outbox', 'tenant_id'],
  ['idempotency_keys', 'tenant_id'],
  ['eval_runs', 'tenant_id'],
  ['eval_baselines', 'tenant_id'],
  ['cortex_configs', 'tenant_id'],
  ['rollbacks', 'tenant_id'],
  ['milestones', 'tenant_id'],
  ['signup_tokens', 'tenant_id'],
  ['team_members', 'tenant_id'],
];

/** Deletes the rows of every OWNED table and the teams the tenant owns; the count per table. */
async function deleteOwnedData(work: Work<TenantCtx>, tenantId: string, email: string) {
  const { tx } = work;
  const deleted: Record<string, number> = {};
  const owned = sql`SELECT id FROM teams WHERE owner_tenant_id = ${tenantId}`;
  await tx.execute(sql`DELETE FROM team_members WHERE team_id IN (${owned})`);
  await tx.execute(sql`DELETE FROM team_invitations WHERE team_id IN (${owned})`);
  deleted.teams = (await rows(tx, sql`DELETE FROM teams WHERE owner_tenant_id = ${tenantId} RETURNING 1`)).length;
  for (const [table, column] of OWNED) {
    const [{ n }] = await rows<{ n: number | string }>(
      tx,
      sql`WITH d AS (DELETE FROM ${sql.raw(table)} WHERE ${sql.raw(column)} = ${tenantId} RETURNING 1) SELECT count(*) AS n FROM d`,
    );
    deleted[table] = Number(n);
  }
  await tx.execute(sql`DELETE FROM mail_outbox WHERE lower(to_email) = lower(${email})`);
  return deleted;
}

/**
 * DELETE /v1/account (erasures.account): every memory erased as POST /v1/erasures erases it, the
 * rest of the account's data deleted, every key revoked; one transaction, so a refusal or a
 * failure leaves everything as it was. The receipt is built before the keys are revoked.
 */
export async function deleteAccount(ctx: TenantCtx, input: { confirm: string }) {
  requireUnrestricted(ctx.auth, 'delete the account');
  const key = await ctx.services.signingKey();
  const { tenantId, now } = ctx;
  const receipt = await write(ctx, async (work) => {
    const [tenant] = await rows<{ email: string }>(work.tx, sql`SELECT email FROM tenants WHERE id = ${tenantId} FOR UPDATE`);
    if (!tenant || tenant.email.trim().toLowerCase() !== input.confirm.trim().toLowerCase())
      throw new AppError('CONFIRMATION_MISMATCH', "`confirm` is not the account's e-mail address; nothing was changed");
    const deleted = await deleteOwnedData(work, tenantId, tenant.email);
    await work.audit({ operation: 'account.deleted', resourceType: 'tenant', resourceId: tenantId, metadata: { deleted } });
    const answer = await eraseWithin(work, { selector: {}, echo: { account: true }, reason: 'account deleted', dryRun: false }, key);
    // The e-mail is personal data too; the row stays as the owner of the audit chain.
    await work.tx.execute(
      sql`UPDATE tenants SET email = ${`erased-${tenantId.toLowerCase()}@erased.invalid`}, updated_at = ${now.toISOString()} WHERE id = ${tenantId}`,
    );
    await work.tx.execute(sql`UPDATE api_keys SET status = 'revoked', revoked_at = ${now.toISOString()} WHERE tenant_id = ${tenantId} AND status <> 'revoked'`);
    return answer;
  });
  await forgetKeys(ctx.services, tenantId);
  return receipt;
}
