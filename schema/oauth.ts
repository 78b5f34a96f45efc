import { index, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { apiKeys, tenants } from './accounts';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/** A client registered with POST /oauth/register (functions/oauth); metadata-document clients are not stored. */
export const oauthClients = pgTable('oauth_clients', {
  id: text('id').primaryKey(),
  clientName: text('client_name').notNull(),
  redirectUris: text('redirect_uris').array().notNull(),
  createdAt: ts('created_at').notNull(),
});

/** A grant: a restricted key of the consenting account, with its code and refresh token stored hashed. */
export const oauthGrants = pgTable(
  'oauth_grants',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    keyId: text('key_id')
      .notNull()
      .references(() => apiKeys.id, { onDelete: 'cascade' }),
    clientId: text('client_id').notNull(),
    clientName: text('client_name').notNull(),
    redirectUri: text('redirect_uri').notNull(),
    resource: text('resource').notNull(),
    codeHash: text('code_hash').unique(),
    codeChallenge: text('code_challenge').notNull(),
    codeExpiresAt: ts('code_expires_at').notNull(),
    codeUsedAt: ts('code_used_at'),
    refreshHash: text('refresh_hash').unique(),
    previousRefreshHash: text('previous_refresh_hash'),
    refreshExpiresAt: ts('refresh_expires_at'),
    expiresAt: ts('expires_at'),
    createdAt: ts('created_at').notNull(),
    lastUsedAt: ts('last_used_at'),
    revokedAt: ts('revoked_at'),
  },
  (t) => [
    index('oauth_grants_tenant_idx').on(t.tenantId, t.createdAt),
    index('oauth_grants_key_idx').on(t.keyId),
    index('oauth_grants_previous_refresh_idx').on(t.previousRefreshHash),
  ],
);
