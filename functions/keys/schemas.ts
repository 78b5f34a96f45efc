import { Timestamp } from '../../shared/platform/params';
import { z } from '@hono/zod-openapi';
import { isoOrNull } from '../../shared/platform/time';

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
  })
  .openapi('ApiKey');

export const KeyListResponse = z.object({ keys: z.array(KeySchema) }).openapi('ApiKeyList');

export const RevokeBody = z
  .object({
    key_id: z.string().min(1).max(100).openapi({ description: 'Key id or key prefix', example: 'sk_3fJ9a2LqX' }),
  })
  .openapi('RevokeRequest', { example: { key_id: 'key_5hG2mQ9rT1xVb8Lc0Zp4Wd' } });

export const RevokeResponse = z.object({ revoked_key_id: z.string(), message: z.string() }).openapi('RevokeResponse');

export interface KeyRow {
  id: string;
  keyPrefix: string;
  status: 'active' | 'grace' | 'revoked';
  createdAt: Date;
  expiresAt: Date | null;
  graceExpiresAt: Date | null;
  revokedAt: Date | null;
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
  };
}
