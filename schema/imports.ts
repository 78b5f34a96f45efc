import { pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

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
