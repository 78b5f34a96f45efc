import { index, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { apiKeys, tenants } from './accounts';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/** A console sign-in (functions/console): the hash of the cookie's session id, never the id or the key. */
export const consoleSessions = pgTable(
  'console_sessions',
  {
    idHash: text('id_hash').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    keyId: text('key_id')
      .notNull()
      .references(() => apiKeys.id, { onDelete: 'cascade' }),
    csrfToken: text('csrf_token').notNull(),
    createdAt: ts('created_at').notNull(),
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [index('console_sessions_expiry_idx').on(t.expiresAt), index('console_sessions_key_idx').on(t.keyId)],
);
