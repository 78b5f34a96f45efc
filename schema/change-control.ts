import { bigint, halfvec, integer, pgTable, primaryKey, real, text, timestamp, uuid } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/** History of point-in-time rollbacks of the memory store (migrations/0003). */
export const rollbacks = pgTable('rollbacks', {
  id: text('id').primaryKey(),
  tenantId: text('tenant_id').notNull(),
  target: ts('target').notNull(),
  actor: text('actor'),
  removed: integer('removed').notNull(),
  restored: integer('restored').notNull(),
  reverted: integer('reverted').notNull(),
  createdAt: ts('created_at').notNull(),
});

/**
 * Each live state of a memory as an interval [valid_from, valid_to), written with its events
 * (migrations/0007); replay snapshots read it in creation order.
 */
export const memoryStates = pgTable('memory_states', {
  eventId: bigint('event_id', { mode: 'number' }).primaryKey(),
  tenantId: text('tenant_id').notNull(),
  memoryId: uuid('memory_id').notNull(),
  validFrom: ts('valid_from').notNull(),
  validTo: ts('valid_to'),
  createdAt: ts('created_at').notNull(),
  expiresAt: ts('expires_at'),
});

/**
 * Per state event, its embedding normalized and rounded to halfvec, inline: the preselection of
 * counterfactual recall (migrations/0024), filled on demand.
 */
export const stateVectors = pgTable(
  'state_vectors',
  {
    tenantId: text('tenant_id').notNull(),
    eventId: bigint('event_id', { mode: 'number' }).notNull(),
    unit: halfvec('unit', { dimensions: 512 }),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.eventId] })],
);

/** Each life of a link as an interval, like memory_states (migrations/0008). */
export const edgeStates = pgTable('edge_states', {
  eventId: bigint('event_id', { mode: 'number' }).primaryKey(),
  tenantId: text('tenant_id').notNull(),
  sourceId: uuid('source_id').notNull(),
  targetId: uuid('target_id').notNull(),
  relation: text('relation').notNull(),
  weight: real('weight'),
  validFrom: ts('valid_from').notNull(),
  validTo: ts('valid_to'),
});
