import { desc, eq, sql } from 'drizzle-orm';
import { mailOutbox, tenants } from '../../schema';
import { insertTenant, issueKey, normalizeEmail } from '../../shared/accounts';
import { appendAudit } from '../../shared/audit';
import { AppError, notFound } from '../../shared/errors';
import type { Services } from '../../shared/services';
import type { Tier } from '../../shared/tiers';
import { toTenantDto } from './schemas';

/** Operator-created tenants are verified at once and get their first key in the same transaction. */
export async function createTenant(services: Services, input: { email: string; tier: Tier; requestId: string }) {
  const email = normalizeEmail(input.email);
  const now = services.clock.now();
  return services.db.transaction(async (tx) => {
    const [existing] = await tx.select({ id: tenants.id }).from(tenants).where(sql`lower(${tenants.email}) = ${email}`);
    if (existing) throw new AppError('CONFLICT', 'A tenant with this e-mail already exists', { tenant_id: existing.id });
    const tenant = await insertTenant(tx, { email, tier: input.tier, verified: true, at: now });
    await appendAudit(tx, {
      tenantId: tenant.id,
      operation: 'tenant.created',
      resourceType: 'tenant',
      resourceId: tenant.id,
      actor: 'admin',
      requestId: input.requestId,
      metadata: { tier: input.tier },
      at: now,
    });
    const key = await issueKey(tx, { tenantId: tenant.id, at: now, actor: 'admin', requestId: input.requestId, reason: 'admin' });
    return { ...toTenantDto(tenant), api_key: key.secret, key_id: key.keyId };
  });
}

export async function getTenant(services: Services, tenantId: string) {
  const [tenant] = await services.db.select().from(tenants).where(eq(tenants.id, tenantId));
  if (!tenant) throw notFound('Tenant');
  return toTenantDto(tenant);
}

export async function setTier(services: Services, input: { tenantId: string; tier: Tier; requestId: string }) {
  const now = services.clock.now();
  const tenant = await services.db.transaction(async (tx) => {
    const [before] = await tx.select().from(tenants).where(eq(tenants.id, input.tenantId)).for('update');
    if (!before) throw notFound('Tenant');
    const [after] = await tx.update(tenants).set({ tier: input.tier, updatedAt: now }).where(eq(tenants.id, input.tenantId)).returning();
    if (before.tier !== input.tier) {
      await appendAudit(tx, {
        tenantId: input.tenantId,
        operation: 'tenant.tier_changed',
        resourceType: 'tenant',
        resourceId: input.tenantId,
        actor: 'admin',
        requestId: input.requestId,
        metadata: { from: before.tier, to: input.tier },
        at: now,
      });
    }
    return after;
  });
  services.keyCache?.forgetTenant(input.tenantId);
  return toTenantDto(tenant);
}

export async function listMail(services: Services, to: string) {
  const messages = await services.db
    .select()
    .from(mailOutbox)
    .where(sql`lower(${mailOutbox.toEmail}) = ${normalizeEmail(to)}`)
    .orderBy(desc(mailOutbox.createdAt), desc(mailOutbox.id))
    .limit(50);
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
