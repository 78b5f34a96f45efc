import { doublePrecision, jsonb, pgTable, primaryKey, text, timestamp, unique, uuid } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/** Knowledge graph entities: an entity is its lowercase name within the tenant, whatever its type (migrations/0016, 0031). */
export const knowledgeEntities = pgTable(
  'knowledge_entities',
  {
    id: uuid('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    name: text('name').notNull(),
    entityType: text('entity_type').notNull(),
    metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [unique('knowledge_entities_tenant_id_name_key').on(t.tenantId, t.name)],
);

/** Subject-predicate-object triples; source_memory_id is set to null when that memory is deleted. */
export const knowledgeTriples = pgTable('knowledge_triples', {
  id: uuid('id').primaryKey(),
  tenantId: text('tenant_id').notNull(),
  subjectId: uuid('subject_id').notNull(),
  predicate: text('predicate').notNull(),
  objectId: uuid('object_id').notNull(),
  confidence: doublePrecision('confidence').notNull(),
  sourceMemoryId: uuid('source_memory_id'),
  metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull(),
  createdAt: ts('created_at').notNull(),
});

/** The entities a memory's text names, linked when it is stored (shared/memory/entities.ts). */
export const memoryEntities = pgTable(
  'memory_entities',
  {
    memoryId: uuid('memory_id').notNull(),
    entityId: uuid('entity_id').notNull(),
    tenantId: text('tenant_id').notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.memoryId, t.entityId] })],
);
