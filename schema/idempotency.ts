import { integer, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/** Idempotency-Key records (migrations/0009_idempotency.sql, shared/platform/data/idempotency.ts). */
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    tenantId: text('tenant_id').notNull(),
    keyHash: text('key_hash').notNull(),
    requestHash: text('request_hash').notNull(),
    status: text('status', { enum: ['running', 'committed', 'done'] }).notNull(),
    lockedUntil: ts('locked_until').notNull(),
    responseStatus: integer('response_status'),
    responseHeaders: jsonb('response_headers').$type<Record<string, string>>(),
    /** base64 of IV || AES-GCM ciphertext under a key derived from the Idempotency-Key. */
    responseBody: text('response_body'),
    createdAt: ts('created_at').notNull(),
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.keyHash] })],
);
