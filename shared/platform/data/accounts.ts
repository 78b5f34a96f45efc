import { apiKeys, tenants } from '../../../schema';
import { sha256Hex } from '../contract/crypto';
import type { DbOrTx } from './db';
import { KEY_PREFIX_LENGTH, newApiKeySecret, newId } from '../contract/ids';
import type { Tier } from '../contract/tiers';
import type { Work } from './unit-of-work';

/** Tenants and keys are created by signup/verify (keys family) and by the operator API (admin). */
export async function insertTenant(
  tx: DbOrTx,
  input: { email: string; tier: Tier; verified: boolean; at: Date },
): Promise<{ id: string; email: string; tier: Tier; createdAt: Date }> {
  const id = newId('tenant');
  await tx.insert(tenants).values({
    id,
    email: input.email,
    tier: input.tier,
    emailVerifiedAt: input.verified ? input.at : null,
    createdAt: input.at,
    updatedAt: input.at,
  });
  return { id, email: input.email, tier: input.tier, createdAt: input.at };
}

export interface IssuedKey {
  keyId: string;
  secret: string;
  prefix: string;
  expiresAt: Date | null;
}

/** What a restricted key may do (POST /v1/keys/restricted); space ids are bare uuids. */
export interface Restriction {
  name: string;
  scopes: string[];
  agentId: string | null;
  spaceIds: string[] | null;
}

/** Creates an active key; the secret leaves this function once and is stored only as its hash. */
export async function issueKey(
  work: Work,
  input: { tenantId: string; expiresAt?: Date | null; reason: string; restriction?: Restriction },
): Promise<IssuedKey> {
  const at = work.ctx.now;
  const secret = newApiKeySecret();
  const keyId = newId('key');
  const prefix = secret.slice(0, KEY_PREFIX_LENGTH);
  await work.tx.insert(apiKeys).values({
    id: keyId,
    tenantId: input.tenantId,
    keyHash: await sha256Hex(secret),
    keyPrefix: prefix,
    status: 'active',
    createdAt: at,
    expiresAt: input.expiresAt ?? null,
    ...(input.restriction
      ? {
          restricted: true,
          name: input.restriction.name,
          scopes: input.restriction.scopes,
          agentId: input.restriction.agentId,
          spaceIds: input.restriction.spaceIds,
        }
      : {}),
  });
  await work.audit({
    tenantId: input.tenantId,
    operation: 'key.created',
    resourceType: 'api_key',
    resourceId: keyId,
    metadata: {
      key_prefix: prefix,
      reason: input.reason,
      expires_at: input.expiresAt?.toISOString() ?? null,
      ...(input.restriction
        ? { name: input.restriction.name, scopes: input.restriction.scopes, agent_id: input.restriction.agentId, space_ids: input.restriction.spaceIds }
        : {}),
    },
  });
  return { keyId, secret, prefix, expiresAt: input.expiresAt ?? null };
}

export const normalizeEmail = (email: string) => email.trim().toLowerCase();
