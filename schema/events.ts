import { bigint, boolean, integer, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/**
 * Every emitted event, numbered per tenant (migrations/0011). A `memory.created` event of a store
 * names its memory (`memory_id`, migrations/0052) and its body's `data.memory` is read from that
 * memory's create event (shared/jobs/events.ts `eventBodySql`).
 */
export const events = pgTable('events', {
  id: text('id').primaryKey(),
  tenantId: text('tenant_id').notNull(),
  seq: bigint('seq', { mode: 'number' }),
  type: text('type').notNull(),
  payload: jsonb('payload').$type<Record<string, unknown>>().notNull(),
  createdAt: ts('created_at').notNull(),
  memoryId: uuid('memory_id'),
});

export const webhooks = pgTable('webhooks', {
  id: text('id').primaryKey(),
  tenantId: text('tenant_id').notNull(),
  url: text('url').notNull(),
  events: text('events').array().notNull(),
  active: boolean('active').notNull(),
  description: text('description'),
  format: text('format', { enum: ['raw', 'slack', 'discord'] }).notNull(),
  secret: text('secret').notNull(),
  previousSecret: text('previous_secret'),
  previousSecretExpiresAt: ts('previous_secret_expires_at'),
  failingSince: ts('failing_since'),
  createdAt: ts('created_at').notNull(),
  updatedAt: ts('updated_at').notNull(),
});

export const webhookDeliveries = pgTable('webhook_deliveries', {
  id: text('id').primaryKey(),
  webhookId: text('webhook_id').notNull(),
  tenantId: text('tenant_id').notNull(),
  eventId: text('event_id').notNull(),
  eventType: text('event_type').notNull(),
  attempt: integer('attempt').notNull(),
  statusCode: integer('status_code').notNull(),
  success: boolean('success').notNull(),
  error: text('error'),
  durationMs: integer('duration_ms').notNull(),
  createdAt: ts('created_at').notNull(),
});

/** Open live event streams, one row each, when Redis is not configured (migrations/0012). */
export const eventStreamLeases = pgTable('event_stream_leases', {
  id: text('id').primaryKey(),
  tenantId: text('tenant_id').notNull(),
  keyId: text('key_id').notNull(),
  expiresAt: ts('expires_at').notNull(),
  createdAt: ts('created_at').notNull(),
});
