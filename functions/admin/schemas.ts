import { z } from '@hono/zod-openapi';
import { TIERS } from '../../shared/platform/contract/tiers';

const Tier = z.enum(TIERS).openapi({ example: 'pro' });

export const CreateTenantBody = z
  .object({ email: z.email().max(254).openapi({ example: 'ops@example.com' }), tier: Tier.default('free') })
  .openapi('AdminCreateTenant', { example: { email: 'ops@example.com', tier: 'pro' } });

export const TenantSchema = z
  .object({
    tenant_id: z.string().openapi({ example: 'ten_2aB9xQ7mLp0cRt5VwZ1yK8' }),
    email: z.string(),
    tier: Tier,
    created_at: z.string(),
  })
  .openapi('AdminTenant');

export const CreatedTenantSchema = TenantSchema.extend({
  api_key: z.string().openapi({ description: 'Secret key; shown only here' }),
  key_id: z.string(),
}).openapi('AdminCreatedTenant');

export const TenantParams = z.object({
  tenant_id: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'tenant_id', in: 'path' }, description: 'The tenant (ten_...)', example: 'ten_2aB9xQ7mLp0cRt5VwZ1yK8' }),
});

export const PatchTenantBody = z.object({ tier: Tier }).openapi('AdminPatchTenant', { example: { tier: 'enterprise' } });

export const MailQuery = z.object({
  to: z
    .email()
    .max(254)
    .openapi({ param: { name: 'to', in: 'query' }, description: 'Recipient address', example: 'ada@example.com' }),
});

export const MailList = z
  .object({
    messages: z.array(
      z.object({
        to: z.string(),
        subject: z.string(),
        text: z.string(),
        token: z.string().nullable(),
        created_at: z.string(),
      }),
    ),
  })
  .openapi('AdminMailList');

export const toTenantDto = (t: { id: string; email: string; tier: z.infer<typeof Tier>; createdAt: Date }) => ({
  tenant_id: t.id,
  email: t.email,
  tier: t.tier,
  created_at: t.createdAt.toISOString(),
});
