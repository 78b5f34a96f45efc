import { toUrn } from '../../shared/platform/contract/ids';
import { z } from '@hono/zod-openapi';

export const MAX_TAG = 50;

const Permission = z.enum(['read', 'write']);
const Kind = z.enum(['tag', 'space']).openapi({ description: '`space` when `tag` named a context space you own, else `tag`' });
const TokenText = z.string().trim().min(1).max(200);
const EXAMPLE_TOKEN = 'st_9fK2xQ7mLp0cRt5VwZ1yK8aB3dE6gH4jN2pS5uW8';

export const ShareBody = z
  .object({
    tag: z.string().trim().min(1).max(MAX_TAG).openapi({
      description: 'A tag of your memories, or the id (`urn:uuid:...` or bare uuid) of a context space you own',
      example: 'billing',
    }),
    email: z.email().max(254).openapi({ description: 'Recipient; only the tenant registered with this address can join', example: 'grace@example.com' }),
    permission: Permission.default('read').openapi({ description: '`write` also lets the recipient store memories with the tag (or into the space) for you' }),
  })
  .openapi('ShareRequest', { example: { tag: 'billing', email: 'grace@example.com', permission: 'read' } });

export const ShareCreated = z
  .object({
    share_id: z.string().openapi({ example: 'shr_4f9Qw2b8Zr1LmT0aXcVe3K' }),
    token: z.string().openapi({ description: 'The invitation secret; shown only here and on rotation', example: EXAMPLE_TOKEN }),
    token_prefix: z.string().openapi({ description: 'First 10 characters of the token, kept to recognise it later' }),
    share_url: z.string().openapi({
      description:
        'SHARE_BASE_URL, else PUBLIC_URL, else the address the server listens on, then /join?token=...; never the request Host. Without any of them, the path alone.',
      example: `https://app.example.com/join?token=${EXAMPLE_TOKEN}`,
    }),
    tag: z.string(),
    kind: Kind,
    space_id: z.string().nullable(),
    shared_with_email: z.string(),
    permission: Permission,
    expires_at: z.string(),
    message: z.string(),
  })
  .openapi('ShareCreated');

export const ShareEntry = z
  .object({
    share_id: z.string(),
    token: z.null().openapi({ description: 'Always null: only a hash of the token is kept. Use share_id (or the token you were given) to rotate or revoke' }),
    token_prefix: z.string(),
    share_url: z.null().openapi({ description: 'Always null, for the same reason as token' }),
    tag: z.string(),
    kind: Kind,
    space_id: z.string().nullable(),
    shared_with_email: z.string(),
    permission: Permission,
    owner_tenant_id: z.string(),
    accepted: z.boolean(),
    accepted_by_tenant: z.string().nullable(),
    accepted_at: z.string().nullable(),
    created_at: z.string(),
    expires_at: z.string().nullable(),
    revoked_at: z.string().nullable(),
    status: z.enum(['pending', 'accepted', 'expired', 'revoked']),
  })
  .openapi('ShareInvitation');

export const SharedList = z
  .object({
    shared_by_me: z.array(ShareEntry).openapi({ description: 'Every share you created, newest first, in any state' }),
    shared_with_me: z.array(ShareEntry).openapi({
      description: 'Shares you accepted (in any state) and live invitations addressed to your e-mail that nobody accepted yet, newest first',
    }),
  })
  .openapi('SharedList');

export const TokenParams = z.object({
  token: TokenText.openapi({ param: { name: 'token', in: 'path' }, description: 'The share token (st_...) from the invitation', example: EXAMPLE_TOKEN }),
});

export const ShareRefParams = z.object({
  token: TokenText.openapi({
    param: { name: 'token', in: 'path' },
    description: 'The share token (st_...) or the share id (shr_...)',
    example: 'shr_4f9Qw2b8Zr1LmT0aXcVe3K',
  }),
});

export const TokenCheck = z
  .object({
    valid: z.boolean(),
    owner_tenant_id: z.string().optional().openapi({ description: 'Only when valid and not yet accepted' }),
    tag: z.string().optional().openapi({ description: 'Only when valid and not yet accepted' }),
    permission: Permission.optional().openapi({ description: 'Only when valid and not yet accepted' }),
    already_accepted: z.boolean(),
    expires_at: z.string().nullable(),
    error: z.enum(['not_found', 'expired', 'revoked']).nullable(),
  })
  .openapi('ShareTokenCheck');

export const JoinBody = z.object({ token: TokenText.openapi({ example: EXAMPLE_TOKEN }) }).openapi('JoinShareRequest', { example: { token: EXAMPLE_TOKEN } });

export const JoinResponse = z
  .object({
    success: z.literal(true),
    share_id: z.string(),
    tag: z.string(),
    kind: Kind,
    space_id: z.string().nullable(),
    owner_tenant_id: z.string(),
    permission: Permission,
    expires_at: z.string().nullable(),
    message: z.string(),
  })
  .openapi('JoinShareResponse');

export interface ShareRow {
  id: string;
  ownerTenantId: string;
  kind: 'tag' | 'space';
  tag: string;
  spaceId: string | null;
  sharedWithEmail: string;
  permission: 'read' | 'write';
  tokenPrefix: string;
  accepted: boolean;
  acceptedByTenant: string | null;
  acceptedAt: Date | null;
  createdAt: Date;
  expiresAt: Date | null;
  revokedAt: Date | null;
}

export type ShareStatus = z.infer<typeof ShareEntry>['status'];

export function shareStatus(s: ShareRow, now: Date): ShareStatus {
  if (s.revokedAt) return 'revoked';
  if (s.expiresAt && s.expiresAt <= now) return 'expired';
  return s.accepted ? 'accepted' : 'pending';
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function toShareEntry(s: ShareRow, now: Date): z.infer<typeof ShareEntry> {
  return {
    share_id: s.id,
    token: null,
    token_prefix: s.tokenPrefix,
    share_url: null,
    tag: s.tag,
    kind: s.kind,
    space_id: s.spaceId ? toUrn(s.spaceId) : null,
    shared_with_email: s.sharedWithEmail,
    permission: s.permission,
    owner_tenant_id: s.ownerTenantId,
    accepted: s.accepted,
    accepted_by_tenant: s.acceptedByTenant,
    accepted_at: iso(s.acceptedAt),
    created_at: s.createdAt.toISOString(),
    expires_at: iso(s.expiresAt),
    revoked_at: iso(s.revokedAt),
    status: shareStatus(s, now),
  };
}
