import { integer, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/** The source id of every record an import restored, and what it became (migrations/0036). */
export const importSources = pgTable(
  'import_sources',
  {
    tenantId: text('tenant_id').notNull(),
    sourceId: text('source_id').notNull(),
    targetId: text('target_id'),
    importedAt: ts('imported_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.sourceId] })],
);

/** An import that writes, with its counts and first errors (migrations/0037). */
export const imports = pgTable('imports', {
  id: text('id').primaryKey(),
  tenantId: text('tenant_id').notNull(),
  format: text('format').notNull(),
  status: text('status').notNull(),
  lines: integer('lines').notNull().default(0),
  valid: integer('valid').notNull().default(0),
  staged: integer('staged').notNull().default(0),
  processed: integer('processed').notNull().default(0),
  stored: jsonb('stored').notNull().default({}),
  alreadyImported: integer('already_imported').notNull().default(0),
  duplicates: integer('duplicates').notNull().default(0),
  skippedWebhooks: integer('skipped_webhooks').notNull().default(0),
  /** mem0 items left out (deleted, expired) and relations without a graph, by why (migrations/0044). */
  skipped: jsonb('skipped').notNull().default({}),
  failed: integer('failed').notNull().default(0),
  erased: integer('erased').notNull().default(0),
  errors: jsonb('errors').notNull().default([]),
  errorsTotal: integer('errors_total').notNull().default(0),
  createdAt: ts('created_at').notNull(),
  updatedAt: ts('updated_at').notNull(),
  completedAt: ts('completed_at'),
});

/** The valid records of an import not stored yet (migrations/0037). */
export const importLines = pgTable(
  'import_lines',
  {
    tenantId: text('tenant_id').notNull(),
    importId: text('import_id').notNull(),
    line: integer('line').notNull(),
    kind: text('kind').notNull(),
    source: text('source').notNull(),
    record: jsonb('record').notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.importId, t.line] })],
);
