import { errors, json, keyRoute } from '../../shared/platform/http/openapi';
import { routeOf } from '../../shared/platform/http/verb';
import * as s from './schemas';
import { diffVerb, lifecycleVerb } from './verbs';

const tags = ['Replay'];
const times = 'Times are ISO 8601 (without an offset, UTC) or `N minutes|hours|days ago`.';

export const timelineRoute = keyRoute({
  operationId: 'replay.timeline',
  feature: 'replay',
  method: 'get',
  path: '/v1/replay/timeline',
  tags,
  summary: 'Timeline of changes to the memory store, newest first',
  description: `Every state change from the memory event log: \`create\`, \`update\`, \`delete\` (a TTL purge is a \`delete\` with \`metadata.reason: "expired"\`) and \`rollback\` (one entry per memory a rollback removed, restored or reverted). Recalls and links are in the per-memory lifecycle. \`since\`/\`until\` are inclusive; \`since\` after \`until\` is 422 INVALID_RANGE. ${times}`,
  request: { query: s.TimelineQuery },
  responses: { 200: json(s.TimelineResponse, 'A page of changes'), ...errors(422) },
});

export const snapshotRoute = keyRoute({
  operationId: 'replay.snapshot',
  feature: 'replay',
  method: 'get',
  path: '/v1/replay/snapshot',
  tags,
  summary: 'The memory store as it was at a moment',
  description: `The memories that existed at \`at\` (changes at exactly \`at\` included; a memory whose TTL had run out is gone), each as it was then, in creation order, paged (\`limit\` 1 to ${s.SNAPSHOT_MAX}). \`edges\` are the links of that moment whose source is on this page, so each edge appears once over all pages; \`total_edges\` counts them all. \`at\` in the future is 400. ${times}`,
  request: { query: s.SnapshotQuery },
  responses: { 200: json(s.SnapshotResponse, 'A page of the snapshot') },
});

export const diffRoute = keyRoute({
  ...routeOf(diffVerb),
  path: '/v1/replay/diff',
  tags,
  summary: 'What changed between two moments',
  description: `\`added\`: existed at \`to\`, not at \`from\`; \`removed\`: the reverse; \`modified\`: existed at both with a different observation, tags, importance, context, agent_id, space_id or superseded_by (listed in \`changed\`). Both required; \`from\` must be before \`to\` (else 422 INVALID_RANGE); neither in the future. ${times}`,
  responses: { 200: json(s.DiffResponse, 'The differences'), ...errors(422) },
});

export const memoryRoute = keyRoute({
  ...routeOf(lifecycleVerb),
  path: '/v1/replay/memory/{memory_id}',
  tags,
  summary: 'The lifecycle of one memory',
  description: `Every event of the memory oldest first (create, update, delete, expire, recall, link, rollback) with a \`detail\` object, the versions its content went through, its current links, the knowledge graph \`entities\` it mentions (\`link\`/\`unlink\` events with relation \`mentions\`), and recall statistics; \`current_state\` is \`active\`, \`superseded\`, \`expired\` or \`deleted\`. Works for deleted memories too. A memory with no history of yours is 404.`,
  responses: { 200: json(s.LifecycleResponse, 'The lifecycle'), ...errors(404) },
});

export const recallRoute = keyRoute({
  operationId: 'replay.recall',
  feature: 'replay',
  method: 'get',
  path: '/v1/replay/recall',
  tags,
  summary: 'Counterfactual recall: semantic search over the store as it was at a moment',
  description: `Ranks the memories that existed at \`at\` by cosine similarity between the query and the embedding each memory had at that time (\`score\` = \`similarity\`). Nothing is recorded: no recall counts change. \`at\` in the future is 400. ${times}`,
  request: { query: s.RecallQuery },
  responses: { 200: json(s.RecallResponse, 'Ranked memories of that moment'), ...errors(502, 503) },
});
