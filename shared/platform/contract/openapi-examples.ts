/**
 * Example values for the OpenAPI document's fields that carry none of their own. Reference UIs
 * (Scalar at /docs) build a response example from the schema and show the word "string" for a
 * string without an example, format or enum; this fills those fields from one table of realistic
 * values, by property name (or `Component.property` where one name means different things), after
 * the document is generated. An `.openapi({ example })` on the field itself always wins.
 * test/docs.test.ts fails when a response field is left without an example, so a new field name
 * needs an entry here (or an example of its own).
 */

const MEMORY_URN = 'urn:uuid:01935f6e-8a2b-7c3d-9e4f-5a6b7c8d9e0f';
const OTHER_MEMORY_URN = 'urn:uuid:01935f71-2c4d-7e5f-8a6b-9c0d1e2f3a4b';
const SPACE_URN = 'urn:uuid:01935f60-1a2b-7c3d-8e4f-5a6b7c8d9e01';
const CREATED = '2026-11-22T10:00:00.000Z';
const UPDATED = '2026-11-22T10:05:00.000Z';
const LATER = '2026-11-23T10:00:00.000Z';
const HASH = '3f79bb7b435b05321651daefd374cdc681dc06faa65e374e38337b88ca046dea';
const PREV_HASH = 'a4d55a8d778e5022fab701977c5d840bbc486d0bc1c1e5c5a5c28c5ff5e0a0b3';
const TENANT = 'ten_2aB9xQ7mLp0cRt5VwZ1yK8';
const OBSERVATION = 'The user prefers invoices in EUR.';
const TAGS = ['preferences', 'billing'];

const BY_NAME: Record<string, unknown> = {
  // ids
  id: MEMORY_URN,
  uuid: MEMORY_URN,
  memory_id: MEMORY_URN,
  source_id: MEMORY_URN,
  target_id: OTHER_MEMORY_URN,
  space_id: SPACE_URN,
  edge_id: 'urn:uuid:01935f74-5e6f-7a8b-9c0d-1e2f3a4b5c6d',
  owner_tenant_id: TENANT,
  accepted_by_tenant: 'ten_8Zr1LmT0aXcVe3K4f9Qw2b',
  share_id: 'shr_4f9Qw2b8Zr1LmT0aXcVe3K',
  rollback_id: 'rb_6Tn3Wq8Ys1Xa5Cd9Fg2Hj7',
  key_id: 'key_5hG2mQ9rT1xVb8Lc0Zp4Wd',
  revoked_key_id: 'key_5hG2mQ9rT1xVb8Lc0Zp4Wd',
  resource_id: MEMORY_URN,
  request_id: 'req_4f9Qw2b8Zr1LmT0aXcVe3K',
  new_key: 'sk_7QmX2pLr9Kd4aWc0Ty1Nb5Ve3Hj6GsF8uZoR2iE4tY',
  token_prefix: 'st_9fK2xQ',
  // times
  created_at: CREATED,
  updated_at: UPDATED,
  accepted_at: UPDATED,
  achieved_at: CREATED,
  at: CREATED,
  expires_at: LATER,
  grace_expires_at: LATER,
  revoked_at: UPDATED,
  last_recalled_at: UPDATED,
  occurred_at: CREATED,
  last_session_at: UPDATED,
  performed_at: UPDATED,
  snapshot_at: CREATED,
  timestamp: UPDATED,
  server_time_utc: UPDATED,
  from_timestamp: CREATED,
  to_timestamp: UPDATED,
  target_timestamp: CREATED,
  rolled_back_to: CREATED,
  resets_at: '2026-12-01T00:00:00.000Z',
  period_start: '2026-11-01T00:00:00.000Z',
  period_end: '2026-11-30T23:59:59.999Z',
  projected_limit_date: '2026-11-28',
  period: '2026-11',
  // memories
  observation: OBSERVATION,
  observation_preview: OBSERVATION,
  context: 'From the March billing call',
  tags: TAGS,
  tag: 'billing',
  agent_id: 'billing-agent',
  hash: HASH,
  content_hash: HASH,
  superseded_by: OTHER_MEMORY_URN,
  superseded: [OTHER_MEMORY_URN],
  auto_links: [OTHER_MEMORY_URN],
  changed: ['observation', 'tags'],
  relation: 'similar',
  query: 'invoice currency',
  q: 'invoice currency',
  mode: 'hybrid',
  // audit
  actor: 'key_5hG2mQ9rT1xVb8Lc0Zp4Wd',
  resource_type: 'memory',
  entry_hash: HASH,
  prev_hash: PREV_HASH,
  expected: HASH,
  actual: PREV_HASH,
  // spaces and shares
  name: 'billing-research',
  description: 'What the billing agents learned',
  allowed_agent_ids: ['billing-agent'],
  allowed_tenant_ids: [TENANT],
  shared_with_email: 'grace@example.com',
  email: 'ada@example.com',
  // accounts
  tier: 'free',
  plan: 'free',
  required_tier: 'pro',
  current_tier: 'free',
  milestone: 'first_memory',
  upgrade_url: 'https://engram.example.com/pricing',
  upgrade_message: 'Upgrade to Pro for 500,000 API calls a month.',
  version: '0.1.0',
  target: '2026-11-22T10:00:00Z',
  // operator mail
  to: 'ada@example.com',
  subject: 'Verify your engram account',
  text: 'Your verification token: vt_8sQm2x9PzLr4Kd0aWc7Ty1Nb5Ve3Hj6G',
  token: 'vt_8sQm2x9PzLr4Kd0aWc7Ty1Nb5Ve3Hj6G',
  // probes
  error: 'connection refused',
  warnings: ['Mail is stored, not sent (MAIL_TRANSPORT=outbox).'],
  path: 'importance',
  message: 'importance: Too big: expected number to be <=10',
};

const BY_COMPONENT: Record<string, unknown> = {
  'SignupResponse.message': 'Check your e-mail for a verification token, then call POST /v1/verify with it.',
  'VerifyResponse.message': 'Account verified. Store this key now: it is not shown again.',
  'RotateResponse.message': `New key issued. The previous key keeps working until ${LATER}.`,
  'RevokeResponse.message': 'Key revoked; it stops working immediately.',
  'RollbackResponse.message': `Rolled back to ${CREATED}: 2 removed, 1 restored, 0 reverted.`,
  'ShareCreated.message': `Invitation sent to grace@example.com. It expires on ${LATER}.`,
  'JoinShareResponse.message': 'Joined. You can read the shared memories (scope=shared on /v1/memories).',
  'RollbackPreview.warnings': ['2 memories stored after the target will be removed.'],
  'Health.warnings': ['Mail is stored, not sent (MAIL_TRANSPORT=outbox).'],
  'ReplayDiff.memory_id': MEMORY_URN,
};

type Schema = Record<string, unknown> & {
  $ref?: string;
  type?: string | string[];
  format?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: boolean | Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
};

/** Formats a reference UI turns into a value of its own. */
const FORMATS = new Set(['date-time', 'date', 'time', 'email', 'uri', 'uuid', 'hostname', 'ipv4', 'ipv6', 'binary']);

const isSchema = (s: unknown): s is Schema => typeof s === 'object' && s !== null && !Array.isArray(s);

const hasOwnExample = (s: Schema) =>
  s.example !== undefined ||
  (Array.isArray(s.examples) && s.examples.length > 0) ||
  s.default !== undefined ||
  s.const !== undefined ||
  (Array.isArray(s.enum) && s.enum.length > 0);

const isPlainString = (s: Schema) => {
  const type = Array.isArray(s.type) ? s.type.filter((t) => t !== 'null') : [s.type];
  return !s.$ref && type.length === 1 && type[0] === 'string' && !(s.format && FORMATS.has(s.format)) && !hasOwnExample(s);
};

function fillProperty(schema: Schema, value: unknown) {
  if (hasOwnExample(schema) || schema.$ref) return;
  if (isPlainString(schema)) {
    if (typeof value === 'string') schema.example = value;
    return;
  }
  const items = schema.items;
  if (isSchema(items) && isPlainString(items)) {
    if (Array.isArray(value)) schema.example = value;
    else if (typeof value === 'string') items.example = value;
    return;
  }
  // A nullable string written as anyOf [string, null].
  for (const alt of [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])])
    if (isSchema(alt) && isPlainString(alt) && typeof value === 'string') alt.example = value;
}

function walk(schema: unknown, component: string, seen: Set<object>) {
  if (!isSchema(schema) || seen.has(schema) || schema.$ref) return;
  seen.add(schema);
  for (const [name, prop] of Object.entries(schema.properties ?? {})) {
    if (!isSchema(prop)) continue;
    const value = BY_COMPONENT[`${component}.${name}`] ?? BY_NAME[name];
    if (value !== undefined) fillProperty(prop, value);
    walk(prop, component, seen);
  }
  walk(schema.items, component, seen);
  if (isSchema(schema.additionalProperties)) walk(schema.additionalProperties, component, seen);
  for (const part of [...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])]) walk(part, component, seen);
}

/** Fills examples in place (components and inline schemas of every operation) and returns the document. */
export function withFieldExamples<T>(document: T): T {
  const doc = document as {
    components?: { schemas?: Record<string, unknown> };
    paths?: Record<string, Record<string, { requestBody?: unknown; responses?: Record<string, unknown> }>>;
  };
  const seen = new Set<object>();
  for (const [name, schema] of Object.entries(doc.components?.schemas ?? {})) walk(schema, name, seen);
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(item)) {
      const bodies = [op?.requestBody, ...Object.values(op?.responses ?? {})] as { content?: Record<string, { schema?: unknown }> }[];
      for (const body of bodies) {
        for (const media of Object.values(body?.content ?? {})) walk(media.schema, `${method.toUpperCase()} ${path}`, seen);
      }
    }
  }
  return document;
}
