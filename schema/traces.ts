import { boolean, index, integer, jsonb, pgTable, text, timestamp, unique } from 'drizzle-orm/pg-core';
import { sql } from 'drizzle-orm';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const TRACE_STATUSES = ['active', 'completed', 'failed', 'interrupted'] as const;
export const STEP_TYPES = ['THOUGHT', 'ACTION', 'OBSERVATION', 'OUTPUT', 'ERROR', 'POLICY_CHECK'] as const;

export const traces = pgTable(
  'traces',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    agentId: text('agent_id').notNull(),
    status: text('status', { enum: TRACE_STATUSES }).notNull(),
    description: text('description'),
    tags: text('tags').array().notNull(),
    createdAt: ts('created_at').notNull(),
    completedAt: ts('completed_at'),
    integrityRootHash: text('integrity_root_hash'),
    signature: text('signature'),
    signatureAlgorithm: text('signature_algorithm'),
    stepCount: integer('step_count').notNull(),
    signedAt: ts('signed_at'),
    keyId: text('key_id'),
    lastChainHash: text('last_chain_hash'),
    lastActivityAt: ts('last_activity_at').notNull(),
    /** How its steps hash and what its certificate signs (migrations/0038, functions/traces/hashing.ts). */
    certificateVersion: integer('certificate_version').notNull().default(2),
    certificateSignature: text('certificate_signature'),
  },
  (t) => [
    index('traces_tenant_idx').on(t.tenantId, t.createdAt.desc(), t.id.desc()),
    index('traces_agent_idx').on(t.tenantId, t.agentId, t.createdAt.desc(), t.id.desc()),
    index('traces_idle_idx').on(t.lastActivityAt).where(sql`status = 'active'`),
  ],
);

/** The public half of every key that ever signed a trace (migrations/0015). */
export const traceSigningKeys = pgTable('trace_signing_keys', {
  keyId: text('key_id').primaryKey(),
  publicKey: text('public_key').notNull(),
  algorithm: text('algorithm').notNull(),
  firstUsedAt: ts('first_used_at').notNull(),
});

export const traceSteps = pgTable(
  'trace_steps',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    traceId: text('trace_id').notNull(),
    stepIndex: integer('step_index').notNull(),
    type: text('type', { enum: STEP_TYPES }).notNull(),
    content: text('content').notNull(),
    metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull(),
    integrityHash: text('integrity_hash').notNull(),
    previousChainHash: text('previous_chain_hash'),
    chainHash: text('chain_hash').notNull(),
    wasInterrupted: boolean('was_interrupted').notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [unique().on(t.traceId, t.stepIndex), index('trace_steps_actions_idx').on(t.tenantId, t.createdAt, t.stepIndex).where(sql`type = 'ACTION'`)],
);
