import { z } from '@hono/zod-openapi';
import { MENTION_RULE } from '../../shared/memory/entities';
import { errors, json, jsonBody, keyRoute } from '../../shared/platform/http/openapi';
import { routeOf } from '../../shared/platform/http/verb';
import { AS_OF_MAX_MEMORIES } from './as-of';
import * as s from './schemas';
import { deleteMemoryVerb, getMemoryVerb, searchVerb } from './verbs';

const tags = ['Memories'];

export const storeRoute = keyRoute({
  operationId: 'memories.store',
  confinable: true,
  method: 'post',
  path: '/v1/memories',
  tags,
  summary: 'Store a memory',
  description:
    `Embeds and stores an observation (at most ${s.MAX_OBSERVATION} characters). Duplicates are the same observation in the same space. \`auto_link\` links it to up to 3 live memories with cosine ≥ 0.80. Counts against the monthly memories quota. Concurrent stores of one tenant may commit in one transaction (a group commit); each still answers, and is audited under its own key and request id, as if stored alone in arrival order.\n\n` +
    `Knowledge graph (Pro+): \`entities\` lists the entities of the knowledge graph this memory was linked to. ${MENTION_RULE}\n\n` +
    "Into another tenant's store: with `owner_tenant_id` through a write share covering a tag or the space, or with the `space_id` of another tenant's space that grants one of your teams (`team:<team_id>` in its `allowed_tenant_ids`) and allows team writes (`team_write`), as owner, admin or member of that team. The memory is the space owner's: it counts against the owner's quota, enters the owner's audit chain with `writer_tenant_id`, and duplicates, superseding and auto-links stay inside what the grant covers. Update and delete stay with the owner. 403 FORBIDDEN when you may read the space but not store into it (a `readonly` member, a space without `team_write`, a tenant listed by id); a space you cannot read is 400 like an unknown one.",
  request: { body: jsonBody(s.StoreBody) },
  responses: {
    201: json(s.StoreResponse, 'Stored'),
    202: json(s.HeldMemoryResponse, 'Held for review by a memory policy (docs/governed-memories.md): not stored, not searchable until approved'),
    ...errors(400, 403, 409, 502, 503),
  },
});

export const batchStoreRoute = keyRoute({
  operationId: 'memories.storeBatch',
  confinable: true,
  method: 'post',
  path: '/v1/memories/batch',
  tags,
  summary: 'Store up to 100 memories in one request',
  description:
    `Stores each of \`memories\` (1 to ${s.MAX_BATCH} bodies of \`POST /v1/memories\`) as if it were stored alone, in order: a later one sees the earlier ones as duplicates, auto-link targets and spent quota. One embedding call serves all of them and everything stored commits in one transaction, with an audit entry, events and a \`memory.created\` webhook event per memory.\n\n` +
    'Each memory gets its own result: 201 with the store response, or the error a single store would have answered (400 for a bad body or space, 403, 409 for a duplicate with `on_conflict: reject`, 429 once the monthly memories quota runs out) with the same error body; a failed memory writes nothing and does not stop the others. The request answers 200 with the results whatever they are; an error of the whole request (a bad envelope, an unavailable embedding provider) stores nothing. With `Idempotency-Key` a repeat replays the whole batch response.',
  request: { body: jsonBody(s.BatchStoreBody) },
  responses: { 200: json(s.BatchStoreResponse, 'One result per memory'), ...errors(400, 502, 503) },
});

export const listRoute = keyRoute({
  operationId: 'memories.list',
  confinable: true,
  method: 'get',
  path: '/v1/memories',
  tags,
  summary: 'List memories, newest first',
  description:
    'Memories you can read (`scope`: your own, shared with you, or all), filtered by tags, agent, space and event time (`occurred_after`/`occurred_before`; after before is 422 INVALID_RANGE), one page at a time; expired memories never appear. `total` and `total_count` count every match. `as_of` (Pro+, as replay) answers from your own store as it was at that time, rebuilt from its history.',
  request: { query: s.ListQuery },
  responses: { 200: json(s.ListResponse, 'A page of memories'), ...errors(400, 403, 422) },
});

export const searchRoute = keyRoute({
  ...routeOf(searchVerb),
  path: '/v1/memories/search',
  tags,
  summary: 'Search memories',
  description:
    `Tag, agent, space and superseded filters narrow the candidates in SQL before ranking. With \`recency_weight\` 0, \`score\` equals the cosine \`similarity\` (mode \`semantic\`); higher values blend in exp(-age_days/30), the age of its \`occurred_at\`. \`occurred_after\`/\`occurred_before\` narrow by event time (after before is 422 INVALID_RANGE). Each returned memory of your own counts as a recall. \`as_of\` (Pro+, as replay) searches your own store as it was at that time, with the same filters and ranking, and counts no recall; it ranks at most ${AS_OF_MAX_MEMORIES} memories (more is 400: narrow it).

` +
    'Where the deployment has a reranker (RERANK_PROVIDER), the top candidates of every mode go to it and its relevance replaces `score`; `min_score` and `limit` apply after it. A reranker that is slow or down never fails the search: the answer keeps its own order and says `rerank: "failed"`. The `Server-Timing` header says where the time went (`embed`, `db`, `rank`, and `rerank` when asked).',
  responses: {
    200: {
      ...json(s.SearchResponse, 'Ranked memories'),
      headers: {
        'Server-Timing': {
          description: 'Milliseconds spent embedding the query, reading the database, ranking and reranking: `embed;dur=2.1, db;dur=4.0, rank;dur=0.3`',
          schema: { type: 'string' },
        },
      },
    },
    ...errors(400, 403, 422, 502, 503),
  },
});

export const exportRoute = keyRoute({
  operationId: 'memories.export',
  confinable: true,
  method: 'get',
  path: '/v1/memories/export',
  tags,
  summary: 'Export your memories (streamed file)',
  description: 'Every live memory the account owns, as Markdown, JSON or CSV, streamed as a download; `tags` and `agent_id` narrow it.',
  request: { query: s.ExportQuery },
  responses: {
    200: {
      description: 'File download: text/markdown, application/json or text/csv',
      content: {
        'text/markdown': { schema: z.string() },
        'application/json': { schema: z.array(s.MemorySchema) },
        'text/csv': { schema: z.string() },
      },
    },
    ...errors(400),
  },
});

export const contextNowRoute = keyRoute({
  operationId: 'memories.contextNow',
  confinable: true,
  method: 'get',
  path: '/v1/context/now',
  tags,
  summary: 'Temporal context for an agent session',
  description:
    'The server time, the 5 newest memories, how many were stored in the last 24 hours and when the account last touched its memories. `min_trust` and `source_kind` narrow the memories and the count as they narrow search and list.',
  request: { query: s.ContextNowQuery },
  responses: { 200: json(s.ContextNowResponse, 'Now, recent memories and the last activity') },
});

export const getRoute = keyRoute({
  ...routeOf(getMemoryVerb),
  path: '/v1/memories/{id}',
  tags,
  summary: 'Get a memory',
  description: 'One of your memories, or one shared with you; 404 for an unknown, expired or foreign id.',
  responses: { 200: json(s.MemorySchema, 'The memory'), ...errors(400, 404) },
});

export const patchRoute = keyRoute({
  operationId: 'memories.update',
  confinable: true,
  method: 'patch',
  path: '/v1/memories/{id}',
  tags,
  summary: 'Update a memory',
  description:
    "`tags` replaces the list. Two concurrent updates: one wins, the other gets 409 CONFLICT. Only your own memories: one you stored into another tenant's store (write share or team space) is that tenant's, and 404 here.",
  request: { params: s.IdParams, body: jsonBody(s.PatchBody) },
  responses: { 200: json(s.PatchResponse, 'Updated'), ...errors(400, 403, 404, 409, 502, 503) },
});

export const deleteRoute = keyRoute({
  ...routeOf(deleteMemoryVerb),
  path: '/v1/memories/{id}',
  tags,
  summary: 'Delete a memory permanently (and its links)',
  description:
    "Removes the memory and its links; memories it had superseded become current again. The delete is audited and can be undone by a rollback. Only your own memories: one you stored into another tenant's store (write share or team space) is that tenant's, and 404 here.",
  responses: { 200: json(s.DeleteResponse, 'Deleted'), ...errors(400, 404) },
});
