import { Timestamp } from '../../shared/platform/contract/params';
import { z } from '@hono/zod-openapi';
import { toUrn } from '../../shared/platform/contract/ids';
import { isoOrNull } from '../../shared/platform/contract/time';

export const SignupBody = z
  .object({
    email: z.email().max(254).openapi({ example: 'ada@example.com' }),
  })
  .openapi('SignupRequest', { example: { email: 'ada@example.com' } });

export const SignupResponse = z
  .object({
    api_key: z.null().openapi({ description: 'Always null: the key is issued by POST /v1/verify' }),
    tier: z.literal('free'),
    created_at: z.string().openapi({ example: '2026-11-22T10:00:00.000Z' }),
    message: z.string(),
    requires_verification: z.literal(true),
  })
  .openapi('SignupResponse');

export const VerifyBody = z
  .object({
    token: z.string().min(1).max(200).openapi({ example: 'vt_8sQm2x9PzLr4Kd0aWc7Ty1Nb5Ve3Hj6G' }),
    email: z.email().max(254).openapi({ example: 'ada@example.com' }),
  })
  .openapi('VerifyRequest', { example: { token: 'vt_8sQm2x9PzLr4Kd0aWc7Ty1Nb5Ve3Hj6G', email: 'ada@example.com' } });

export const VerifyResponse = z
  .object({
    api_key: z.string().openapi({ description: 'The secret key; shown only here', example: 'sk_3fJ9a2LqXw8Vb1Nc5Tz0Hk4Pm7Rd2Ys6Gu9Ej3QoL5iF' }),
    key_id: z.string().openapi({ example: 'key_5hG2mQ9rT1xVb8Lc0Zp4Wd' }),
    tier: z.string().openapi({ example: 'free' }),
    message: z.string(),
  })
  .openapi('VerifyResponse');

export const RotateBody = z
  .object({
    expires_at: Timestamp('Optional expiry of the new key (ISO 8601, in the future)').optional().openapi({ example: '2027-06-01T00:00:00Z' }),
  })
  .openapi('RotateRequest', { example: { expires_at: '2030-01-01T00:00:00Z' } });

export const RotateResponse = z
  .object({
    new_key: z.string().openapi({ description: 'The new secret key; shown only here' }),
    key_id: z.string(),
    grace_expires_at: z.string().nullable().openapi({ description: 'Until then the old key still works' }),
    message: z.string(),
  })
  .openapi('RotateResponse');

export const KeySchema = z
  .object({
    key_id: z.string().openapi({ example: 'key_5hG2mQ9rT1xVb8Lc0Zp4Wd' }),
    key_prefix: z.string().openapi({ example: 'sk_3fJ9a2LqX' }),
    tier: z.string(),
    created_at: z.string(),
    expires_at: z.string().nullable(),
    grace_expires_at: z.string().nullable(),
    revoked_at: z.string().nullable(),
    status: z.enum(['active', 'expired', 'revoked', 'grace']),
    name: z.string().nullable().openapi({ description: 'The name a restricted key was given; null for an unrestricted key' }),
    restricted: z.boolean().openapi({ description: 'Whether the key is restricted (POST /v1/keys/restricted)' }),
    scopes: z.array(z.string()).openapi({ description: 'What the key may call: `["*"]` for an unrestricted key', example: ['memories:read', 'traces:write'] }),
    agent_id: z.string().nullable().openapi({ description: "A restricted key confined to one agent's memories: that agent" }),
    space_ids: z
      .array(z.string().openapi({ example: 'urn:uuid:01935f6e-8a2b-7c3d-9e4f-5a6b7c8d9e0f' }))
      .nullable()
      .openapi({ description: 'A restricted key confined to some context spaces: those (urn:uuid:<uuid>); null: not confined' }),
  })
  .openapi('ApiKey');

export const KeyListResponse = z.object({ keys: z.array(KeySchema) }).openapi('ApiKeyList');

export const RevokeBody = z
  .object({
    key_id: z.string().min(1).max(100).openapi({ description: 'Key id or key prefix', example: 'sk_3fJ9a2LqX' }),
  })
  .openapi('RevokeRequest', { example: { key_id: 'key_5hG2mQ9rT1xVb8Lc0Zp4Wd' } });

export const MAX_KEY_SPACES = 50;

export const RestrictedKeyBody = z
  .object({
    name: z.string().trim().min(1).max(100).openapi({ description: 'What the key is for (1 to 100 characters)', example: 'support-bot reader' }),
    scopes: z
      .array(z.string().min(1).max(100))
      .min(1)
      .max(100)
      .openapi({
        description:
          '`<family>:read` or `<family>:write` (write implies read), or `*`. The family is the prefix of the operationIds of /openapi.json (`memories`, `traces`, ...); a GET needs read, any other method write.',
        example: ['memories:read', 'memories:write'],
      }),
    agent_id: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .openapi({ description: "Confines the key to this agent's memories: it reads only them and stores only as this agent", example: 'support-bot' }),
    space_ids: z
      .array(z.string().max(256))
      .max(MAX_KEY_SPACES)
      .optional()
      .openapi({
        description: `Confines the key to these context spaces (urn:uuid:<uuid>, at most ${MAX_KEY_SPACES}): it reads and stores memories only in them`,
        example: ['urn:uuid:01935f6e-8a2b-7c3d-9e4f-5a6b7c8d9e0f'],
      }),
    expires_at: Timestamp('Optional expiry of the key (ISO 8601, in the future)').optional().openapi({ example: '2030-01-01T00:00:00Z' }),
  })
  .openapi('RestrictedKeyRequest', { example: { name: 'support-bot reader', scopes: ['memories:read'], agent_id: 'support-bot' } });

export const RestrictedKeyResponse = z
  .object({
    key_id: z.string().openapi({ example: 'key_5hG2mQ9rT1xVb8Lc0Zp4Wd' }),
    api_key: z.string().openapi({ description: 'The secret key; shown only here', example: 'sk_3fJ9a2LqXw8Vb1Nc5Tz0Hk4Pm7Rd2Ys6Gu9Ej3QoL5iF' }),
    name: z.string().openapi({ example: 'support-bot reader' }),
    scopes: z.array(z.string().openapi({ example: 'memories:read' })),
    agent_id: z.string().nullable().openapi({ example: 'support-bot' }),
    space_ids: z.array(z.string().openapi({ example: 'urn:uuid:01935f6e-8a2b-7c3d-9e4f-5a6b7c8d9e0f' })).nullable(),
    expires_at: z.string().nullable(),
    created_at: z.string(),
  })
  .openapi('RestrictedKey');

export const RevokeResponse = z.object({ revoked_key_id: z.string(), message: z.string() }).openapi('RevokeResponse');

export interface KeyRow {
  id: string;
  keyPrefix: string;
  status: 'active' | 'grace' | 'revoked';
  createdAt: Date;
  expiresAt: Date | null;
  graceExpiresAt: Date | null;
  revokedAt: Date | null;
  restricted: boolean;
  name: string | null;
  scopes: string[] | null;
  agentId: string | null;
  spaceIds: string[] | null;
}

export function keyStatus(k: KeyRow, now: Date): z.infer<typeof KeySchema>['status'] {
  if (k.status === 'revoked') return 'revoked';
  if (k.expiresAt && k.expiresAt <= now) return 'expired';
  if (k.status === 'grace' && k.graceExpiresAt && k.graceExpiresAt <= now) return 'expired';
  return k.status;
}

export function toKeyDto(k: KeyRow, tier: string, now: Date): z.infer<typeof KeySchema> {
  return {
    key_id: k.id,
    key_prefix: k.keyPrefix,
    tier,
    created_at: k.createdAt.toISOString(),
    expires_at: isoOrNull(k.expiresAt),
    grace_expires_at: isoOrNull(k.graceExpiresAt),
    revoked_at: isoOrNull(k.revokedAt),
    status: keyStatus(k, now),
    name: k.name,
    restricted: k.restricted,
    scopes: k.scopes ?? ['*'],
    agent_id: k.agentId,
    space_ids: k.spaceIds?.map(toUrn) ?? null,
  };
}
