import { z } from '@hono/zod-openapi';
import { PageQuery, paging } from '../../shared/platform/data/pagination';
import { CsvEnum, Timestamp, withRange } from '../../shared/platform/contract/params';
import { isoOrNull } from '../../shared/platform/contract/time';

export const AUDIT_LIST_MAX = 1_000;

/** The operations a client filters the audit log by, and the stored audit operations behind each. */
export const SPEC_OPERATIONS = ['create', 'update', 'delete', 'rollback'] as const;
export type SpecOperation = (typeof SPEC_OPERATIONS)[number];

export const STORED_OPERATIONS: Record<SpecOperation, readonly string[]> = {
  create: ['memory.create'],
  update: ['memory.update'],
  // A TTL purge is a delete the system made; its entry says so with metadata.reason 'expired'.
  delete: ['memory.delete', 'memory.expire'],
  rollback: ['rollback', 'memory.rollback'],
};

const specOperationOf = new Map<string, SpecOperation>(SPEC_OPERATIONS.flatMap((spec) => STORED_OPERATIONS[spec].map((stored) => [stored, spec] as const)));

/** `create`/`update`/`delete`/`rollback` for memory-layer entries; other entries keep their own name. */
export const publicOperation = (stored: string): string => specOperationOf.get(stored) ?? stored;

const EventTypes = CsvEnum(
  SPEC_OPERATIONS,
  `Comma-separated, any of ${SPEC_OPERATIONS.join(', ')}. Given, it keeps only memory-layer entries of those operations.`,
  'create,delete',
);

export const ListPaging = paging({ totals: ['total'], hasMore: true });

const since = Timestamp('Entries at or after this time (ISO 8601; a time without an offset is UTC)');
const until = Timestamp('Entries at or before this time (ISO 8601)');

export const ListQuery = withRange(
  PageQuery({ max: AUDIT_LIST_MAX, default: 50 }).extend({ since: since.optional(), until: until.optional(), event_type: EventTypes.optional() }),
  'since',
  'until',
);

export const ExportQuery = withRange(
  z.object({
    format: z.enum(['csv', 'json', 'jsonl']).default('csv').openapi({ description: 'File format: CSV, one JSON array, or JSON Lines (one entry per line)' }),
    since: since.optional(),
    until: until.optional(),
  }),
  'since',
  'until',
);

export const SummaryQuery = z.object({
  since: Timestamp('Start of the period (default: the start of your retention window; an earlier time is clamped to it)').optional(),
});

export const AuditEntrySchema = z
  .object({
    timestamp: z.string().openapi({ example: '2026-11-22T10:00:00.000Z' }),
    operation: z.string().openapi({
      description:
        '`create`, `update`, `delete` or `rollback` for memory operations; other audited events keep their name (`key.created`, `share.accepted`, ...)',
      example: 'create',
    }),
    memory_id: z.string().nullable().openapi({ example: 'urn:uuid:01935f6e-8a2b-7c3d-9e4f-5a6b7c8d9e0f' }),
    content_hash: z.string().nullable().openapi({ description: 'SHA-256 of the observation after the operation (before, for a delete)' }),
    agent_id: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()).openapi({
      description: 'Varies: update carries `changed` (field names); a TTL purge carries `reason: "expired"`, `count` and `memory_ids`',
    }),
    entry_id: z.string().openapi({ example: 'aud_3Zk9Qm2x8PzLr4Kd0aWc7T' }),
    seq: z.number().int().openapi({ description: 'Position in your hash chain (gapless, from 1)' }),
    source_operation: z
      .string()
      .openapi({ description: 'The operation as stored and hashed (`memory.create`, `memory.expire`, ...)', example: 'memory.create' }),
    resource_type: z.string(),
    resource_id: z.string().nullable(),
    actor: z.string().nullable().openapi({ description: 'Key id, `admin` or `system`' }),
    request_id: z.string().nullable(),
    prev_hash: z.string().openapi({ description: 'entry_hash of the previous entry (empty string before the first)' }),
    entry_hash: z.string().openapi({
      description:
        'SHA-256 hex of prev_hash + the RFC 8785 canonical JSON of {id: entry_id, tenant_id, seq, created_at: timestamp, operation: source_operation, resource_type, resource_id, actor, metadata} as stored (for `memory.expire` the metadata without the `reason` added on read)',
    }),
  })
  .openapi('AuditEntry');

export const ListResponse = z
  .object({
    entries: z.array(AuditEntrySchema),
    ...ListPaging.fields,
  })
  .openapi('AuditList');

export const SummaryResponse = z
  .object({
    total_operations: z.number().int().openapi({ description: 'Audit entries in the period (every audited operation)' }),
    error_count: z.number().int().openapi({ description: 'Authenticated requests answered 4xx or 5xx, counted per UTC day from the day of `period_start`' }),
    anomaly_count: z.number().int().openapi({ description: 'Of those, 5xx server errors' }),
    anomalies: z
      .object({
        bulk_delete: z.number().int(),
        rapid_writes: z.number().int(),
        server_errors: z.number().int(),
      })
      .openapi({
        description:
          'Anomaly events recorded in the period, by kind (each is also an audit entry `anomaly.<kind>` and a webhook event of that type): `bulk_delete` at 50 memory deletes, `rapid_writes` at 500 memory creates and updates, `server_errors` at 10 responses with status 500 or above, each per tenant within a fixed 60-second window; at most one of each kind per window',
        example: { bulk_delete: 1, rapid_writes: 0, server_errors: 0 },
      }),
    by_operation: z.record(z.string(), z.number().int()).openapi({ example: { create: 12, update: 3, delete: 1, 'key.created': 1 } }),
    period_start: z.string(),
    period_end: z.string(),
    retention_days: z.number().int(),
  })
  .openapi('AuditSummary');

export const IntegrityFailure = z
  .object({
    kind: z.enum(['memory_hash', 'audit_hash', 'audit_link', 'audit_gap', 'audit_head']),
    id: z.string().openapi({ description: 'Memory urn, or audit entry id (`audit_head` when the chain head has no entry to name)' }),
    seq: z.number().int().optional(),
    expected: z.string().openapi({ description: 'What verification computed (hash, previous entry hash, or seq)' }),
    actual: z.string().openapi({ description: 'What is stored' }),
  })
  .openapi('IntegrityFailure');

export const VerifyResponse = z
  .object({
    valid: z.boolean(),
    timestamp: z.string(),
    checked: z.object({ memories: z.number().int(), audit_entries: z.number().int() }),
    integrity_failures: z.array(IntegrityFailure),
    failure_count: z.number().int().openapi({ description: 'All failures found; `integrity_failures` lists at most the first 1000' }),
  })
  .openapi('AuditVerify');

/** An audit_log row as raw SQL returns it. */
export interface AuditRow {
  tenant_id: string;
  seq: string | number;
  id: string;
  created_at: Date | string;
  operation: string;
  resource_type: string;
  resource_id: string | null;
  actor: string | null;
  request_id: string | null;
  metadata: Record<string, unknown> | null;
  prev_hash: string;
  entry_hash: string;
}

export type AuditEntry = z.infer<typeof AuditEntrySchema>;

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

export function toEntryDto(r: AuditRow): AuditEntry {
  const meta = r.metadata ?? {};
  const operation = publicOperation(r.operation);
  const memoryLayer = specOperationOf.has(r.operation);
  const expired = r.operation === 'memory.expire';
  const ids = Array.isArray(meta.memory_ids) ? meta.memory_ids : [];
  const memoryId = operation === 'rollback' || r.resource_type !== 'memory' ? null : (r.resource_id ?? (ids.length === 1 ? str(ids[0]) : null));
  return {
    timestamp: isoOrNull(new Date(r.created_at))!,
    operation,
    memory_id: memoryId,
    content_hash: memoryLayer && operation !== 'rollback' ? str(meta.hash) : null,
    agent_id: str(meta.agent_id),
    metadata: expired ? { ...meta, reason: 'expired' } : meta,
    entry_id: r.id,
    seq: Number(r.seq),
    source_operation: r.operation,
    resource_type: r.resource_type,
    resource_id: r.resource_id,
    actor: r.actor,
    request_id: r.request_id,
    prev_hash: r.prev_hash,
    entry_hash: r.entry_hash,
  };
}
