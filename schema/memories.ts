import { sql } from 'drizzle-orm';
import { bigint, boolean, customType, halfvec, integer, jsonb, pgTable, primaryKey, real, smallint, text, timestamp, uuid, vector } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });
const tsvector = customType<{ data: string }>({ dataType: () => 'tsvector' });

export const contextSpaces = pgTable('context_spaces', {
  id: uuid('id').primaryKey(),
  ownerTenantId: text('owner_tenant_id').notNull(),
  name: text('name').notNull(),
  description: text('description'),
  allowedAgentIds: text('allowed_agent_ids').array().notNull(),
  allowedTenantIds: text('allowed_tenant_ids').array().notNull(),
  tags: text('tags').array().notNull(),
  createdAt: ts('created_at').notNull(),
  updatedAt: ts('updated_at').notNull(),
  deletedAt: ts('deleted_at'),
  /** Members (not readonly) of teams granted as `team:<id>` may store into the space (migrations/0014). */
  teamWrite: boolean('team_write').notNull().default(false),
});

export const memories = pgTable('memories', {
  id: uuid('id').primaryKey(),
  tenantId: text('tenant_id').notNull(),
  observation: text('observation').notNull(),
  tags: text('tags').array().notNull(),
  importance: smallint('importance').notNull(),
  confidence: real('confidence').notNull(),
  recallCount: integer('recall_count').notNull(),
  lastRecalledAt: ts('last_recalled_at'),
  supersededBy: uuid('superseded_by'),
  context: text('context'),
  agentId: text('agent_id'),
  spaceId: uuid('space_id'),
  contentHash: text('content_hash').notNull(),
  /** Half precision, inline in the row (migrations/0050); the history keeps full vectors. */
  embedding: halfvec('embedding', { dimensions: 512 }).notNull(),
  /** Not yet in the HNSW graph (a rollback wrote it); searches read such rows exactly. migrations/0006 */
  indexPending: boolean('index_pending').notNull().default(false),
  expiresAt: ts('expires_at'),
  version: integer('version').notNull(),
  createdAt: ts('created_at').notNull(),
  updatedAt: ts('updated_at').notNull(),
  /** Provenance and trust, set by the server on every write (migrations/0041, shared/memory/provenance.ts). */
  sourceKind: text('source_kind', { enum: ['user', 'agent', 'tool', 'import', 'share', 'system'] })
    .notNull()
    .default('user'),
  sourceVia: text('source_via', { enum: ['api', 'mcp', 'console', 'import', 'job'] })
    .notNull()
    .default('api'),
  sourceKeyId: text('source_key_id'),
  sourceRef: text('source_ref'),
  trust: text('trust', { enum: ['verified', 'agent', 'external'] })
    .notNull()
    .default('verified'),
  /** When what it records happened; null: `created_at`. */
  occurredAt: ts('occurred_at'),
  /** Stemmed lexemes for keyword search, kept by Postgres (migrations/0002). */
  searchTsv: tsvector('search_tsv').generatedAlwaysAs(sql`to_tsvector('english', observation || ' ' || coalesce(context, ''))`),
});

export const memoryEvents = pgTable('memory_events', {
  id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
  tenantId: text('tenant_id').notNull(),
  memoryId: uuid('memory_id').notNull(),
  kind: text('kind', { enum: ['create', 'update', 'delete', 'recall', 'link', 'unlink', 'expire', 'rollback'] }).notNull(),
  at: ts('at').notNull(),
  actor: text('actor'),
  requestId: text('request_id'),
  before: jsonb('before').$type<Record<string, unknown> | null>(),
  after: jsonb('after').$type<Record<string, unknown> | null>(),
  embedding: vector('embedding', { dimensions: 512 }),
  /** The state's vector is the memory row's current one, kept there, not here (migrations/0045). */
  embeddingLive: boolean('embedding_live').notNull().default(false),
  metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull(),
});

export const memoryEdges = pgTable('memory_edges', {
  id: uuid('id').primaryKey(),
  tenantId: text('tenant_id').notNull(),
  sourceId: uuid('source_id').notNull(),
  targetId: uuid('target_id').notNull(),
  relation: text('relation').notNull(),
  weight: real('weight').notNull(),
  createdAt: ts('created_at').notNull(),
});

export const shares = pgTable('shares', {
  id: text('id').primaryKey(),
  ownerTenantId: text('owner_tenant_id').notNull(),
  kind: text('kind', { enum: ['tag', 'space'] }).notNull(),
  tag: text('tag').notNull(),
  spaceId: uuid('space_id'),
  sharedWithEmail: text('shared_with_email').notNull(),
  permission: text('permission', { enum: ['read', 'write'] }).notNull(),
  tokenHash: text('token_hash').notNull().unique(),
  tokenPrefix: text('token_prefix').notNull(),
  accepted: boolean('accepted').notNull(),
  acceptedByTenant: text('accepted_by_tenant'),
  acceptedAt: ts('accepted_at'),
  createdAt: ts('created_at').notNull(),
  expiresAt: ts('expires_at'),
  revokedAt: ts('revoked_at'),
});

/**
 * Each tenant's BM25 collection statistics as append-only deltas (migrations/0022): the sums over a
 * tenant's rows are its memory count and total tsvector length. Written by triggers on memories.
 */
export const memoryCorpusStats = pgTable('memory_corpus_stats', {
  id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
  tenantId: text('tenant_id').notNull(),
  docs: bigint('docs', { mode: 'number' }).notNull(),
  lexemes: bigint('lexemes', { mode: 'number' }).notNull(),
});

/**
 * Postings of the stemmed lexemes of each memory (migrations/0026, narrowed by 0053): the lexeme's
 * frequency in the memory and the memory's length, read index-only by a whole-store keyword search.
 * Keyed by the tenant's number (tenants.tenant_no). Written by triggers on memories.
 */
export const memoryPostings = pgTable(
  'memory_postings',
  {
    tenantNo: integer('tenant_no').notNull(),
    memoryId: uuid('memory_id').notNull(),
    tf: smallint('tf').notNull(),
    len: smallint('len').notNull(),
    lexeme: text('lexeme').notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantNo, t.lexeme, t.memoryId] })],
);

/**
 * Each lexeme's document frequency, largest frequency and shortest memory over a tenant's memories
 * up to its mark (memory_lexeme_folds): a keyword search counts only the postings after the mark
 * (migrations/0058). Moved forward by the maintenance; kept exact by the postings triggers.
 */
export const memoryLexemeStats = pgTable(
  'memory_lexeme_stats',
  {
    tenantNo: integer('tenant_no').notNull(),
    df: integer('df').notNull(),
    maxTf: smallint('max_tf').notNull(),
    minLen: smallint('min_len').notNull(),
    lexeme: text('lexeme').notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantNo, t.lexeme] })],
);

/** Each tenant's mark: the largest memory id counted in memory_lexeme_stats (migrations/0058). */
export const memoryLexemeFolds = pgTable('memory_lexeme_folds', {
  tenantNo: integer('tenant_no').primaryKey(),
  through: uuid('through').notNull(),
});
