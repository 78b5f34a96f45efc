import { bigint, integer, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const usageCounters = pgTable(
  'usage_counters',
  {
    tenantId: text('tenant_id').notNull(),
    metric: text('metric').notNull(),
    bucket: text('bucket').notNull(),
    value: bigint('value', { mode: 'number' }).notNull(),
    lastGrant: bigint('last_grant', { mode: 'number' }).notNull(),
    lastLimit: bigint('last_limit', { mode: 'number' }),
    expiresAt: ts('expires_at'),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.metric, t.bucket] })],
);

/** Request windows of no tenant (per client address, per e-mail) on Postgres without Redis. */
export const rateWindows = pgTable(
  'rate_windows',
  {
    subject: text('subject').notNull(),
    windowStart: ts('window_start').notNull(),
    hits: integer('hits').notNull(),
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.subject, t.windowStart] })],
);

export const milestones = pgTable(
  'milestones',
  {
    tenantId: text('tenant_id').notNull(),
    milestone: text('milestone').notNull(),
    achievedAt: ts('achieved_at').notNull(),
    metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.milestone] })],
);

export const auditHeads = pgTable('audit_heads', {
  tenantId: text('tenant_id').primaryKey(),
  seq: bigint('seq', { mode: 'number' }).notNull(),
  hash: text('hash').notNull(),
  firstSeq: bigint('first_seq', { mode: 'number' }).notNull(),
  firstPrevHash: text('first_prev_hash').notNull(),
  eventSeq: bigint('event_seq', { mode: 'number' }).notNull(),
});

export const auditLog = pgTable(
  'audit_log',
  {
    tenantId: text('tenant_id').notNull(),
    seq: bigint('seq', { mode: 'number' }).notNull(),
    id: text('id').notNull().unique(),
    createdAt: ts('created_at').notNull(),
    operation: text('operation').notNull(),
    resourceType: text('resource_type').notNull(),
    resourceId: text('resource_id'),
    actor: text('actor'),
    requestId: text('request_id'),
    metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull(),
    prevHash: text('prev_hash').notNull(),
    entryHash: text('entry_hash').notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.seq] })],
);

export const outbox = pgTable('outbox', {
  id: text('id').primaryKey(),
  tenantId: text('tenant_id'),
  topic: text('topic').notNull(),
  payload: jsonb('payload').$type<Record<string, unknown>>().notNull(),
  status: text('status', { enum: ['pending', 'done', 'dead'] }).notNull(),
  attempts: integer('attempts').notNull(),
  runAt: ts('run_at').notNull(),
  lockedUntil: ts('locked_until'),
  lastError: text('last_error'),
  createdAt: ts('created_at').notNull(),
  doneAt: ts('done_at'),
});
