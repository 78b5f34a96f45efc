import { z } from '@hono/zod-openapi';
import { CLAIMABLE_KINDS, MAX_SOURCE_REF, SOURCE_KINDS, TRUST_LEVELS } from '../../shared/memory/provenance';
import { MemorySchema, SourceSchema, TrustSchema } from '../../shared/memory/rows';
import { ErrorSchema } from '../../shared/platform/http/openapi';
import { PageQuery, paging } from '../../shared/platform/data/pagination';
import { PointInTime, UrnId } from '../../shared/platform/contract/params';

export { MemorySchema };

export const MAX_OBSERVATION = 16_000;
export const MAX_CONTEXT = 4_000;
export const MAX_TAGS = 50;
export const MAX_TAG_LENGTH = 64;

const urn = UrnId;

const tag = z.string().trim().min(1).max(MAX_TAG_LENGTH);
const Tags = z
  .array(tag)
  .max(MAX_TAGS)
  .openapi({ example: ['preferences', 'billing'] });

export const StoreBody = z
  .object({
    observation: z.string().trim().min(1).max(MAX_OBSERVATION).openapi({ example: 'The user prefers invoices in EUR.' }),
    tags: Tags.default([]),
    importance: z.number().int().min(1).max(10).default(5),
    context: z.string().max(MAX_CONTEXT).optional(),
    agent_id: z.string().min(1).max(128).optional().openapi({ example: 'billing-agent' }),
    space_id: urn('Context space (Pro+)').optional(),
    ttl_seconds: z.number().int().min(60).max(7_776_000).optional().openapi({ description: 'Expiry after this many seconds (60 to 90 days)' }),
    expires_at: z.string().datetime({ offset: true }).optional().openapi({
      description: 'Expiry at this time (ISO 8601, in the future), instead of `ttl_seconds`: what an import keeps of an expiry set elsewhere',
      example: '2027-01-01T00:00:00Z',
    }),
    auto_link: z.boolean().default(true),
    on_conflict: z.enum(['lww', 'reject', 'manual']).default('lww').openapi({
      description:
        'When the same observation already exists in the same space: `lww` stores and supersedes the older one, `reject` answers 409, `manual` stores both and flags it',
    }),
    source: z
      .object({
        kind: z.enum(CLAIMABLE_KINDS).optional().openapi({
          description:
            'Who this comes from, as far as the key may say: an unrestricted key writes `user` unless it says `agent` or `tool`; a restricted key writes `agent`, or `tool`',
        }),
        ref: z
          .string()
          .trim()
          .min(1)
          .max(MAX_SOURCE_REF)
          .optional()
          .openapi({ description: 'Where it came from: a URL, a message id', example: 'slack:C024BE91L/1700000000.000100' }),
      })
      .strict()
      .optional()
      .openapi({ description: 'Provenance the caller may add; the rest of `source` (the way in, the key, the agent) is set by engram' }),
    occurred_at: z
      .string()
      .datetime({ offset: true })
      .optional()
      .openapi({ description: 'When what it records happened in the world (ISO 8601); defaults to the time it is stored', example: '2026-11-20T18:30:00Z' }),
    owner_tenant_id: z.string().min(1).max(64).optional().openapi({
      description:
        "Store into another tenant's memories through a write share covering one of the tags or the space. Not needed with the `space_id` of another tenant's space you can read: the space's owner is the target",
    }),
  })
  .openapi('StoreMemoryRequest', {
    example: { observation: 'The user prefers invoices in EUR.', tags: ['preferences', 'billing'], importance: 7, agent_id: 'billing-agent' },
  });

export const StoreResponse = z
  .object({
    id: z.string(),
    uuid: z.string(),
    hash: z.string().openapi({ description: 'SHA-256 of the observation (hex)' }),
    created_at: z.string(),
    conflict_detected: z.boolean(),
    superseded: z.array(z.string()).openapi({ description: 'Older duplicates this memory superseded (lww)' }),
    auto_links: z.array(z.string()),
    entities: z.array(z.string()).openapi({
      description: 'Knowledge graph entities (ids) the observation names, linked to the memory; always empty below Pro',
      example: ['urn:uuid:01935f80-3b4c-7d5e-8f6a-7b8c9d0e1f2a'],
    }),
    expires_at: z.string().nullable(),
    policy_warnings: z
      .array(z.string())
      .optional()
      .openapi({ description: 'Present when a memory policy rule with `warn` matched: stored anyway, these are its reasons', example: ['Possibly stale'] }),
  })
  .openapi('StoreMemoryResponse');

/** 202: a memory policy held the memory for review (docs/governed-memories.md). */
export const HeldMemoryResponse = z
  .object({
    status: z.literal('pending_review'),
    approval_id: z.string().openapi({
      description: 'Decide it with POST /v1/approvals/{approval_id}/decision; the memory id it gets when approved',
      example: 'urn:uuid:01935f6e-8a2b-7c3d-9e4f-5a6b7c8d9e0f',
    }),
    memory_id: z
      .string()
      .openapi({ description: 'The same id: the memory it becomes when approved', example: 'urn:uuid:01935f6e-8a2b-7c3d-9e4f-5a6b7c8d9e0f' }),
    policy_result: z
      .record(z.string(), z.unknown())
      .openapi({ description: "Why it was held: the policy, rule, reason and the text it matched (as an action's `policy_result`)" }),
    message: z.string(),
  })
  .openapi('HeldMemoryResponse');

export const MAX_BATCH = 100;

export const BatchStoreBody = z
  .object({
    memories: z
      .array(
        z.record(z.string(), z.unknown()).openapi({
          type: 'object',
          description: 'A store request body as `POST /v1/memories` takes it (StoreMemoryRequest); validated on its own, so a bad one fails alone with 400',
        }),
      )
      .min(1)
      .max(MAX_BATCH)
      .openapi({ description: `1 to ${MAX_BATCH} memories, stored in this order` }),
  })
  .openapi('BatchStoreRequest', {
    example: {
      memories: [
        { observation: 'The user prefers invoices in EUR.', tags: ['billing'] },
        { observation: 'The user lives in Lisbon.', importance: 6 },
      ],
    },
  });

export const BatchStoreResponse = z
  .object({
    results: z
      .array(
        z.object({
          index: z.number().int().openapi({ description: 'Position in `memories`' }),
          status: z
            .number()
            .int()
            .openapi({ description: 'What storing this memory alone would have answered: 201, 202 (held for review), or the error status' }),
          memory: StoreResponse.optional().openapi({ description: 'On 201: the store response' }),
          held: HeldMemoryResponse.optional().openapi({ description: 'On 202: a memory policy held it for review' }),
          error: ErrorSchema.optional().openapi({ description: 'Otherwise: the error body a single store would have answered' }),
        }),
      )
      .openapi({ description: 'One result per memory, in request order' }),
    stored: z.number().int(),
    held: z.number().int().openapi({ description: 'Memories a policy held for review (202)' }),
    failed: z.number().int(),
  })
  .openapi('BatchStoreResponse');

const csv = z
  .string()
  .max(2_000)
  .transform((v) =>
    v
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean),
  )
  .pipe(z.array(tag).max(MAX_TAGS));

const Scope = z.enum(['all', 'own', 'shared']).default('all').openapi({
  description:
    '`own` memories; memories `shared` with you: through shares you accepted and spaces that list you (or a team of yours) in `allowed_tenant_ids`; or `all`: your own and those of shares you accepted. A space that lists you joins a read only when you name it (`space_id`) or ask for `shared`.',
});

/** The provenance filters of search and list (docs/memories.md#provenance-and-trust), applied in SQL before ranking or paging. */
const provenanceFilters = {
  min_trust: z.enum(TRUST_LEVELS).optional().openapi({
    description:
      "Only memories trusted at least this much: `verified` (the account's own people), `agent` (also agent keys), `external` (everything). Another account's memory is `external` to you",
  }),
  source_kind: z
    .string()
    .max(200)
    .transform((v) =>
      v
        .split(',')
        .map((t) => t.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.enum(SOURCE_KINDS)).min(1).max(SOURCE_KINDS.length))
    .optional()
    .openapi({
      description: `Comma-separated source kinds (${SOURCE_KINDS.join(', ')}): only memories from one of them. Another account's memory is \`share\` to you`,
      example: 'user,agent',
    }),
};

/** The contract names `total`; existing clients also read `total_count`, so both (docs/architecture.md#pages-and-totals). */
export const ListPaging = paging({ totals: ['total', 'total_count'], hasMore: true });

/** Event-time filters and the `as_of` read, shared by list and search (docs/memories.md#event-time). */
const EventTimeQuery = {
  occurred_after: PointInTime('Only memories whose `occurred_at` is at or after this time (ISO 8601 or `N days ago`)', '2026-11-01T00:00:00Z').optional(),
  occurred_before: PointInTime('Only memories whose `occurred_at` is before this time (ISO 8601 or `N days ago`)', '2026-11-20T00:00:00Z').optional(),
  as_of: PointInTime(
    'Answer from the store as it was at this time, rebuilt from its history (Pro+, as replay): your own memories as they were then, with the same filters and ranking; nothing is recorded. In the future is 400',
    '1 day ago',
  ).optional(),
};

export const ListQuery = PageQuery({ max: 100, default: 20 }).extend({
  tags: csv.optional().openapi({ description: 'Comma-separated; a memory matches if it has any of them' }),
  agent_id: z.string().min(1).max(128).optional().openapi({ description: 'Only memories stored by this agent' }),
  space_id: urn('Context space').optional(),
  scope: Scope,
  ...provenanceFilters,
  ...EventTimeQuery,
});

export const ListResponse = z
  .object({
    memories: z.array(MemorySchema),
    ...ListPaging.fields,
  })
  .openapi('MemoryList');

export const IdParams = z.object({ id: UrnId('The memory (urn:uuid:<uuid> or the bare uuid)') });

export const PatchBody = z
  .object({
    observation: z.string().trim().min(1).max(MAX_OBSERVATION).optional(),
    importance: z.number().int().min(1).max(10).optional(),
    tags: Tags.optional(),
    superseded_by: urn('Memory that supersedes this one; null clears it').nullable().optional(),
    occurred_at: z
      .string()
      .datetime({ offset: true })
      .nullable()
      .optional()
      .openapi({ description: 'When what it records happened (ISO 8601); null: when it was stored', example: '2026-11-20T18:30:00Z' }),
  })
  .refine((b) => Object.values(b).some((v) => v !== undefined), {
    message: 'send at least one of observation, importance, tags, superseded_by, occurred_at',
  })
  .openapi('PatchMemoryRequest', { example: { observation: 'The user prefers invoices in CHF.', importance: 8 } });

export const PatchResponse = z
  .object({ uuid: z.string(), observation: z.string(), updated_at: z.string(), memory: MemorySchema })
  .openapi('PatchMemoryResponse');

export const DeleteResponse = z.object({ deleted: z.boolean(), memory_id: z.string() }).openapi('DeleteMemoryResponse');

const booleanQuery = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

export const SearchQuery = z.object({
  q: z
    .string()
    .trim()
    .min(1)
    .max(2_000)
    .openapi({ description: 'What to search for, in natural language (or keywords for mode `keyword`)', example: 'which currency for invoices' }),
  limit: z.coerce.number().int().min(1).max(100).default(5).openapi({ description: 'At most this many memories' }),
  min_score: z.coerce.number().min(0).max(1).default(0).openapi({ description: 'Leave out memories whose `score` is below this' }),
  tags: csv.optional().openapi({ description: 'Comma-separated; candidates must have at least one' }),
  agent_id: z.string().min(1).max(128).optional().openapi({ description: 'Only memories stored by this agent' }),
  space_id: urn('Context space (Pro+)').optional(),
  recency_weight: z.coerce.number().min(0).max(1).default(0).openapi({
    description: 'Weight w of recency: score = (1-w)·relevance + w·exp(-age_days/30), the age of its `occurred_at`; 0 ranks by relevance alone',
  }),
  include_superseded: booleanQuery.default(false).openapi({ description: '`true` or `1`: also memories that a newer one superseded', default: 'false' }),
  mode: z.enum(['semantic', 'keyword', 'hybrid']).default('semantic').openapi({
    description:
      "`semantic`: cosine similarity of embeddings. `keyword`: Okapi BM25 over Postgres full-text lexemes (English stemming), score 1 - exp(-bm25/10). `hybrid`: 0.3 × min-max-normalised cosine + 0.7 × min-max-normalised BM25 over both candidate lists, then the top 20 lend 0.5 (adjacent) and 0.4 (next) of their score to the memories stored beside them (same agent and space, within 30 minutes, inside the filters), which never ranks a memory matching nothing (no query word, a cosine under half the best candidate's) above one that matches and leaves it a tenth of its score; the mode that retrieves best on the LoCoMo benchmark.",
  }),
  scope: Scope,
  rerank: booleanQuery.default(true).openapi({
    description: '`false` or `0`: no reranking for this search, where the deployment has a reranker (RERANK_PROVIDER); without one it changes nothing',
    default: 'true',
  }),
  ...provenanceFilters,
  ...EventTimeQuery,
});

export const SearchHit = z.object({
  uuid: z.string(),
  observation: z.string(),
  score: z.number().openapi({
    description:
      'Ranking score in [0,1]: cosine (semantic), mapped BM25 (keyword) or the fusion with neighbour shares, scaled so the best is at most 1 (hybrid), blended with recency when recency_weight > 0',
  }),
  similarity: z.number().openapi({ description: 'Raw cosine similarity, clamped to [0,1]' }),
  match_confidence: z.number().openapi({
    description: 'similarity × (0.85 + 0.015·importance) × (1 + 0.05·ln(1 + recall_count)), clamped to [0,1]',
  }),
  tags: z.array(z.string()),
  importance: z.number().int(),
  agent_id: z.string().nullable(),
  space_id: z.string().nullable(),
  owner_tenant_id: z.string(),
  source: SourceSchema,
  trust: TrustSchema,
  occurred_at: z.string(),
  created_at: z.string(),
});

export const SearchResponse = z
  .object({
    query: z.string(),
    mode: z.string(),
    rerank: z.enum(['applied', 'skipped', 'failed']).openapi({
      description:
        '`applied`: the reranker ordered the hits and `score` is its relevance (blended with recency when recency_weight > 0); `skipped`: no reranker, `rerank=false`, or under two candidates; `failed`: the reranker was slow, down or answered nonsense, and the hits are in the search’s own order',
    }),
    total_results: z.number().int(),
    memories: z.array(SearchHit),
  })
  .openapi('SearchResponse');

export const ExportQuery = z.object({
  format: z.enum(['md', 'json', 'csv']).default('md').openapi({ description: 'File format: Markdown, a JSON array of memories, or CSV' }),
  tags: csv.optional().openapi({ description: 'Comma-separated; a memory matches if it has any of them' }),
  agent_id: z.string().min(1).max(128).optional().openapi({ description: 'Only memories stored by this agent' }),
});

/** The provenance filters of search and list, on the session context too (a session may want only what people said). */
export const ContextNowQuery = z.object(provenanceFilters);

export const ContextNowResponse = z
  .object({
    server_time_utc: z.string(),
    recent_memories: z.array(MemorySchema),
    recent_count: z.number().int().openapi({ description: 'Memories stored in the last 24 hours (that pass `min_trust` and `source_kind`)' }),
    last_session_at: z.string().nullable().openapi({ description: 'Time of the last memory activity (store, update, delete, recall)' }),
    seconds_since_last_session: z.number().nullable(),
  })
  .openapi('ContextNow');
