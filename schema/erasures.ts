import { index, jsonb, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/** Signed erasure receipts (migrations/0034): ids, times, counts; never memory content. */
export const erasures = pgTable(
  'erasures',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    erasedAt: ts('erased_at').notNull(),
    receipt: jsonb('receipt').$type<Record<string, unknown>>().notNull(),
    signature: text('signature').notNull(),
  },
  (t) => [index('erasures_tenant_idx').on(t.tenantId, t.erasedAt.desc(), t.id.desc())],
);

/** A tombstone per erased memory: its id, when it was erased and when it lived (migrations/0034). */
export const erasedMemories = pgTable(
  'erased_memories',
  {
    tenantId: text('tenant_id').notNull(),
    memoryId: uuid('memory_id').notNull(),
    erasureId: text('erasure_id').notNull(),
    erasedAt: ts('erased_at').notNull(),
    livedFrom: ts('lived_from').notNull(),
    livedTo: ts('lived_to'),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.memoryId] }), index('erased_memories_erasure_idx').on(t.erasureId)],
);
