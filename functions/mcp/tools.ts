/**
 * The MCP tools: each is a view on one HTTP route, named by its operationId. The input schema, the
 * validation, the tier gate, the quota and the audit are the route's own (docs/architecture.md#mcp);
 * this table only says what a model needs to choose the tool well.
 */
export interface ToolSpec {
  name: string;
  operationId: string;
  title: string;
  /** What it does, when to use it, what it returns: read by the model that picks the tool. */
  description: string;
  readOnly: boolean;
  destructive?: boolean;
  idempotent?: boolean;
  /** A phrase the caller must send as `confirm` before anything is done (destructive tools). */
  confirm?: string;
  /**
   * Argument values the tool sends when the model leaves them out, where the tool's advice differs
   * from the route's default (advertised as the argument's `default`).
   */
  defaults?: Readonly<Record<string, string | number | boolean>>;
  /** Shorter words for an argument than the route's, where the route's document is written for people. */
  describe?: Readonly<Record<string, string>>;
}

/** `scope` of the reads, in a model's words; the route's says which spaces join a read. */
const SCOPE = '`own`, `shared` with you, or `all`';
/** Filters every read of memories takes, in a model's words. */
const READ_FILTERS = {
  tags: 'Any of these tags',
  agent_id: "Only this agent's",
  limit: 'At most this many',
};
/** The provenance filters of the reads, in a model's words (the routes' are written for people). */
const PROVENANCE = {
  min_trust: 'Least trust',
  source_kind: 'Only these kinds',
};
/** An entity name of the knowledge graph, in a model's words. */
const ENTITY = 'Entity name (case-insensitive)';
const ENTITY_TYPE = 'e.g. person; default concept';

export const TOOLS: readonly ToolSpec[] = [
  {
    name: 'remember',
    operationId: 'memories.store',
    title: 'Remember',
    description:
      'Store a fact, preference, decision or event worth recalling, in a sentence or two; tag it for filters. Returns its id, or `pending_review` if a policy holds it: poll `action_status` with its `approval_id`.',
    readOnly: false,
    describe: {
      owner_tenant_id: 'Owner of a write share',
      on_conflict: 'On a duplicate: `lww` supersedes it',
      ttl_seconds: 'Expiry in seconds',
      occurred_at: 'When it happened, if not now',
      expires_at: 'Expiry time',
      source: 'Provenance you may add',
      'source.properties.kind': 'As far as the key may say',
      'source.properties.ref': 'A URL or message id',
    },
  },
  {
    name: 'remember_many',
    operationId: 'memories.storeBatch',
    title: 'Remember many',
    description: 'Store up to 100 memories in one call, each as `remember` takes it. Returns one result per item, in order.',
    readOnly: false,
    describe: { 'memories.items': 'A memory as `remember` takes it' },
  },
  {
    name: 'recall',
    operationId: 'memories.search',
    title: 'Recall',
    description:
      'Search memories by meaning and keywords: use it before answering anything that may depend on what was learned earlier (preferences, decisions, facts about people or projects). Ranked by score.',
    readOnly: true,
    idempotent: true,
    // hybrid retrieves best on the LoCoMo benchmark (docs/performance.md#retrieval-quality-on-locomo); the route keeps semantic
    // as its default for HTTP clients written against the contract.
    defaults: { mode: 'hybrid' },
    describe: {
      q: 'What to look for',
      min_score: 'Drop scores below this',
      scope: SCOPE,
      recency_weight: '0 to 1: weight of recency',
      include_superseded: 'Also superseded ones',
      rerank: 'false: no reranking',
      ...READ_FILTERS,
      mode: '`hybrid` (best), `semantic` or `keyword`',
      ...PROVENANCE,
      as_of: 'Recall what memory held then',
      occurred_after: 'Happened at or after',
      occurred_before: 'Happened before',
    },
  },
  {
    name: 'get_memory',
    operationId: 'memories.get',
    title: 'Get a memory',
    description: 'Read one memory by id, with its tags, agent, space and timestamps.',
    readOnly: true,
    idempotent: true,
  },
  {
    name: 'update_memory',
    operationId: 'memories.update',
    title: 'Update a memory',
    description: 'Change a wrong or outdated memory (text, tags, metadata); the earlier version stays in its history.',
    readOnly: false,
    idempotent: true,
    describe: { occurred_at: 'When it happened; null: when stored', superseded_by: 'Memory that replaces it; null clears' },
  },
  {
    name: 'forget',
    operationId: 'memories.delete',
    title: 'Forget a memory',
    description: 'Delete a memory by id, when it is wrong or the user asks to forget it. A rollback can bring it back.',
    readOnly: false,
    destructive: true,
    idempotent: true,
  },
  {
    name: 'list_memories',
    operationId: 'memories.list',
    title: 'List memories',
    description: 'A page of memories, newest first. Use `recall` to search by meaning.',
    readOnly: true,
    idempotent: true,
    describe: {
      scope: SCOPE,
      ...READ_FILTERS,
      offset: 'Skip this many',
      ...PROVENANCE,
      as_of: 'List what memory held then',
      occurred_after: 'Happened at or after',
      occurred_before: 'Happened before',
    },
  },
  {
    name: 'context_now',
    operationId: 'memories.contextNow',
    title: 'Context now',
    description: 'At the start of a session: the server time, the newest memories, the count of the last day and when memory was last touched.',
    readOnly: true,
    idempotent: true,
    describe: PROVENANCE,
  },
  {
    name: 'memory_history',
    operationId: 'replay.memory',
    title: 'Memory history',
    description: 'Every change, recall and link of one memory (also a deleted one), with each version of its text.',
    readOnly: true,
    idempotent: true,
  },
  {
    name: 'rollback_preview',
    operationId: 'rollback.preview',
    title: 'Preview a rollback',
    description: 'What rolling memory back to a time would change. Call it before `rollback` and show it to the user.',
    readOnly: true,
    idempotent: true,
  },
  {
    name: 'rollback',
    operationId: 'rollback.run',
    title: 'Roll back memory',
    description:
      'Return all memory to its state at a past time (`target`: ISO 8601 or "N minutes|hours|days ago"): later ones removed, deleted or changed ones restored. Only when the user asked, after `rollback_preview`.',
    readOnly: false,
    destructive: true,
    confirm: 'ROLLBACK',
  },
  {
    name: 'audit_verify',
    operationId: 'audit.verify',
    title: 'Verify the audit chain',
    description: 'Recompute the hash chain of the audit trail and report whether any entry was changed, removed or reordered.',
    readOnly: true,
    idempotent: true,
  },
  {
    name: 'request_action',
    operationId: 'actions.submit',
    title: 'Request an action',
    description:
      'Submit a side effect (payment, e-mail, deletion, deployment) here before doing it. The answer: `allowed` (go ahead), `blocked` (do not; the reason says why) or `pending_review` (a human must approve: poll `action_status`).',
    readOnly: false,
    describe: {
      action: '`connector.operation`, e.g. http.post',
      params: 'The payload you will send (a JSON object); policies read it',
    },
  },
  {
    name: 'action_status',
    operationId: 'actions.get',
    title: 'Action status',
    description: 'The status of a submitted action or held memory (`approval_id`), with the decision once made.',
    describe: { action_id: 'Action or held memory id' },
    readOnly: true,
    idempotent: true,
  },
  {
    name: 'explain_action',
    operationId: 'actions.explain',
    title: 'Explain an action',
    description: 'Why an action ended as it did: matched policies, decisions, and the memories at submission.',
    readOnly: true,
    idempotent: true,
  },
  {
    name: 'trace_start',
    operationId: 'traces.start',
    title: 'Start a reasoning trace',
    description: 'Open a signed reasoning trace for a task, to record its steps for a person to verify. Returns its id.',
    readOnly: false,
  },
  {
    name: 'trace_step',
    operationId: 'traces.addStep',
    title: 'Add a trace step',
    description: 'Append one step (a thought, a tool call, an observation, an action) to an open trace. Steps are hash-chained in order.',
    readOnly: false,
    describe: { metadata: 'Any JSON object, hashed with the step' },
  },
  {
    name: 'trace_complete',
    operationId: 'traces.complete',
    title: 'Complete a trace',
    description: 'Seal a trace with its outcome: the server signs it and nothing can be added afterwards. Returns the signed trace.',
    readOnly: false,
  },
  {
    name: 'trace_verify',
    operationId: 'traces.verify',
    title: 'Verify a trace',
    description: 'Recompute a sealed trace and check its signature: tells whether any step was changed since it was signed.',
    readOnly: true,
    idempotent: true,
  },
  {
    name: 'add_fact',
    operationId: 'knowledge.createTriple',
    title: 'Add a fact',
    description: 'Record a fact as subject, predicate, object ("alice" "works_at" "acme") in the knowledge graph.',
    readOnly: false,
    describe: {
      subject: ENTITY,
      predicate: 'The relation, e.g. works_at; stored as given',
      object: ENTITY,
      subject_type: ENTITY_TYPE,
      object_type: ENTITY_TYPE,
      source_memory_id: 'The memory this fact came from',
      metadata: 'Any JSON object, up to 16 KB',
    },
  },
  {
    name: 'query_facts',
    operationId: 'knowledge.listTriples',
    title: 'Query facts',
    description: 'Facts of the knowledge graph, newest first, filtered by subject, predicate or object.',
    readOnly: true,
    idempotent: true,
    describe: { subject: ENTITY, object: ENTITY, limit: 'At most this many', offset: 'Skip this many', source_memory_id: 'Facts from this memory' },
  },
  {
    name: 'find_paths',
    operationId: 'knowledge.paths',
    title: 'Find paths',
    description: 'How two entities of the knowledge graph are connected: the shortest chains of facts between them.',
    readOnly: true,
    idempotent: true,
  },
];
