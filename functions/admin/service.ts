import { insertTenant, issueKey, normalizeEmail } from '../../shared/platform/data/accounts';
import type { Ctx } from '../../shared/platform/contract/context';
import { forgetKeys } from '../../shared/platform/http/auth';
import { AppError, notFound } from '../../shared/platform/contract/errors';
import { write } from '../../shared/platform/data/unit-of-work';
import type { Tier } from '../../shared/platform/contract/tiers';
import * as q from './queries';
import { toTenantDto } from './schemas';

/** Operator-created tenants are verified at once and get their first key in the same transaction. */
export async function createTenant(ctx: Ctx, input: { email: string; tier: Tier }) {
  const email = normalizeEmail(input.email);
  return write(ctx, async (work) => {
    const { tx } = work;
    const existing = await q.findTenantByEmail(tx, email);
    if (existing) throw new AppError('CONFLICT', 'A tenant with this e-mail already exists', { tenant_id: existing.id });
    const tenant = await insertTenant(tx, { email, tier: input.tier, verified: true, at: ctx.now });
    await work.audit({ tenantId: tenant.id, operation: 'tenant.created', resourceType: 'tenant', resourceId: tenant.id, metadata: { tier: input.tier } });
    const key = await issueKey(work, { tenantId: tenant.id, reason: 'admin' });
    return { ...toTenantDto(tenant), api_key: key.secret, key_id: key.keyId };
  });
}

export async function getTenant(ctx: Ctx, input: { tenantId: string }) {
  const tenant = await q.findTenant(ctx.db, input.tenantId);
  if (!tenant) throw notFound('Tenant');
  return toTenantDto(tenant);
}

export async function setTier(ctx: Ctx, input: { tenantId: string; tier: Tier }) {
  const tenant = await write(ctx, async ({ tx, audit }) => {
    const before = await q.findTenant(tx, input.tenantId, true);
    if (!before) throw notFound('Tenant');
    const after = await q.setTier(tx, input.tenantId, input.tier, ctx.now);
    if (before.tier !== input.tier) {
      await audit({
        tenantId: input.tenantId,
        operation: 'tenant.tier_changed',
        resourceType: 'tenant',
        resourceId: input.tenantId,
        metadata: { from: before.tier, to: input.tier },
      });
    }
    return after;
  });
  await forgetKeys(ctx.services, input.tenantId);
  return toTenantDto(tenant);
}

export async function listMail(ctx: Ctx, input: { to: string }) {
  const messages = await q.mailTo(ctx.db, normalizeEmail(input.to), 50);
  return {
    messages: messages.map((m) => ({
      to: m.toEmail,
      subject: m.subject,
      text: m.body,
      token: m.token,
      created_at: m.createdAt.toISOString(),
    })),
  };
}
