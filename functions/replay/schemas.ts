import { z } from '@hono/zod-openapi';
import { PageQuery, paging } from '../../shared/platform/data/pagination';
import { CsvEnum, PointInTime, UrnId } from '../../shared/platform/contract/params';

export const TIMELINE_MAX = 1_000;
export const SNAPSHOT_MAX = 5_000;
export const RECALL_MAX = 100;
export const PREVIEW_CHARS = 120;

/** The operations of the timeline filter, and the event kinds behind each. */
export const OPERATIONS = ['create', 'update', 'delete', 'rollback'] as const;
export type Operation = (typeof OPERATIONS)[number];
export const KINDS_OF: Record<Operation, readonly string[]> = {
  create: ['create'],
  update: ['update'],
  // A TTL purge is a delete the system made; the entry says so with metadata.reason 'expired'.
  delete: ['delete', 'expire'],
  rollback: ['rollback'],
};

const Instant = PointInTime;

const Operations = CsvEnum(OPERATIONS, `Comma-separated, any of ${OPERATIONS.join(', ')}`, 'create,delete');

export const TimelinePaging = paging({ totals: ['total_count'], hasMore: true });
/** The snapshot's total is `total_memories` (docs/architecture.md#pages-and-totals); the page fields add only has_more, limit and offset. */
export const SnapshotPaging = paging({ totals: [], hasMore: true });

export const TimelineQuery = z
  .object({
    since: Instant('Events at or after this time').optional(),
    until: Instant('Events at or before this time').optional(),
    operations: Operations.optional(),
    agent_id: z.string().min(1).max(128).optional().openapi({ description: 'Only events of memories stored by this agent' }),
  })
  .extend(PageQuery({ max: TIMELINE_MAX, default: 100 }).shape);

export const SnapshotQuery = z
  .object({
    at: Instant('The moment to look at (inclusive: changes made at exactly this time are in); not in the future'),
  })
  .extend(PageQuery({ max: SNAPSHOT_MAX, default: 500 }).shape);

export const DiffQuery = z.object({
  from: Instant('Start (the store as it was at this moment)'),
  to: Instant('End; must be after `from`, not in the future'),
});

export const MemoryParams = z.object({
  memory_id: UrnId('The memory (urn:uuid:<uuid>)'),
});

export const RecallQuery = z.object({
  q: z.string().trim().min(1).max(2_000).openapi({ description: 'What to search for, in natural language', example: 'which currency for invoices' }),
  at: Instant('Search the store as it was at this moment; not in the future'),
  limit: z.coerce.number().int().min(1).max(RECALL_MAX).default(5).openapi({ description: 'At most this many memories' }),
});

const TimelineEntry = z.object({
  timestamp: z.string(),
  operation: z.enum(OPERATIONS),
  memory_id: z.string(),
  observation_preview: z
    .string()
    .nullable()
    .openapi({ description: `First ${PREVIEW_CHARS} characters of the observation after the change (before it, for a delete)` }),
  agent_id: z.string().nullable(),
  importance: z.number().int().nullable(),
  content_hash: z.string().nullable(),
  metadata: z.record(z.string(), z.unknown()).openapi({
    description: 'The event metadata; `changed` (field names) on updates, `reason: "expired"` on TTL purges, `restored`/`removed` on rollbacks',
  }),
});

export const TimelineResponse = z
  .object({
    entries: z.array(TimelineEntry),
    ...TimelinePaging.fields,
    period_start: z.string().nullable().openapi({ description: '`since`, else the oldest matching change (null when none)' }),
    period_end: z.string().openapi({ description: '`until`, else now' }),
  })
  .openapi('ReplayTimeline');

const SnapshotMemory = z.object({
  uuid: z.string(),
  observation: z.string(),
  context: z.string().nullable(),
  agent_id: z.string().nullable(),
  tags: z.array(z.string()),
  importance: z.number().int(),
  confidence: z.number(),
  created_at: z.string(),
  space_id: z.string().nullable(),
});

export const EdgeSchema = z
  .object({
    edge_id: z.string(),
    source_id: z.string(),
    target_id: z.string(),
    relation: z.string(),
    weight: z.number(),
  })
  .openapi('ReplayEdge');

export const SnapshotResponse = z
  .object({
    snapshot_at: z.string(),
    total_memories: z.number().int().openapi({ description: 'Memories that existed at `at`, over all pages' }),
    memories: z.array(SnapshotMemory),
    edges: z.array(EdgeSchema).openapi({
      description:
        'Edges that existed at `at` whose source memory is on this page (every edge appears on exactly one page). An edge with relation `mentions` links the memory to a knowledge graph entity it named (`target_id` is the entity_id), weight 1.',
    }),
    total_edges: z.number().int().openapi({ description: 'Edges that existed at `at`, over all pages' }),
    ...SnapshotPaging.fields,
  })
  .openapi('ReplaySnapshot');

const DiffItem = z.object({
  memory_id: z.string(),
  change_type: z.enum(['added', 'removed', 'modified']),
  observation_preview: z.string(),
  importance: z.number().int(),
  changed: z.array(z.string()).optional().openapi({ description: 'On `modified`: the fields that differ' }),
});

export const DiffResponse = z
  .object({
    from_timestamp: z.string(),
    to_timestamp: z.string(),
    added: z.array(DiffItem),
    removed: z.array(DiffItem),
    modified: z.array(DiffItem),
    summary: z.object({ added: z.number().int(), removed: z.number().int(), modified: z.number().int() }),
  })
  .openapi('ReplayDiff');

export const LifecycleResponse = z
  .object({
    memory_id: z.string(),
    observation: z.string().openapi({ description: 'The latest known observation' }),
    created_at: z.string(),
    current_state: z.enum(['active', 'deleted', 'superseded', 'expired']),
    events: z.array(
      z.object({
        timestamp: z.string(),
        event_type: z.enum(['create', 'update', 'delete', 'recall', 'link', 'unlink', 'expire', 'rollback']),
        detail: z.record(z.string(), z.unknown()),
      }),
    ),
    versions: z.array(z.object({ version: z.number().int(), observation: z.string(), importance: z.number().int(), timestamp: z.string() })),
    links: z.array(EdgeSchema.extend({ created_at: z.string() })),
    entities: z
      .array(
        z.object({
          entity_id: z.string().openapi({ example: 'urn:uuid:01935f80-3b4c-7d5e-8f6a-7b8c9d0e1f2a' }),
          name: z.string().openapi({ example: 'ada lovelace' }),
          entity_type: z.string().openapi({ example: 'person' }),
          linked_at: z.string().openapi({ example: '2026-11-22T10:00:00.000Z' }),
        }),
      )
      .openapi({
        description:
          'Knowledge graph entities the memory mentions now (linked when it was stored); their history is the `link`/`unlink` events with relation `mentions`',
      }),
    recall_count: z.number().int(),
    last_recalled_at: z.string().nullable(),
  })
  .openapi('ReplayMemoryLifecycle');

export const RecallResponse = z
  .object({
    query: z.string(),
    at: z.string(),
    total_results: z.number().int(),
    memories: z.array(
      z.object({
        uuid: z.string(),
        observation: z.string(),
        similarity: z.number().openapi({ description: 'Cosine similarity against the embedding the memory had at `at`, clamped to [0,1]' }),
        score: z.number().openapi({ description: 'Equals `similarity` (no recency blend for a look at the past)' }),
        tags: z.array(z.string()),
        importance: z.number().int(),
        created_at: z.string(),
      }),
    ),
  })
  .openapi('ReplayRecall');
