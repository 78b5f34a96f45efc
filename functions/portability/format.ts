import { z } from '@hono/zod-openapi';
import { AGENT_PROVIDERS, AGENT_STATUSES } from '../../schema';

/**
 * The bundle format (docs/portability.md#bundle-versions): one zod schema per line kind. The export
 * builds its lines to these types, the import validates each line against them, and the OpenAPI
 * document serves them as components (`BundleMemoryLine`, ...), so the SDK's types follow.
 *
 * Compatibility: a new optional field is a minor change within a version (an importer ignores the
 * fields it does not know of a version it knows); a removed, renamed or retyped field, or a new
 * required one, is a new `version`, and the import keeps reading every version it lists.
 */
export const BUNDLE_FORMAT = 'engram-bundle';
export const BUNDLE_VERSION = 1;
/** Every version the import reads; a file of another is refused whole. */
export const SUPPORTED_VERSIONS: readonly number[] = [1];

const time = (description = 'ISO 8601') => z.string().nullish().openapi({ description, example: '2026-11-15T12:00:00.000Z' });
const urn = (what: string) =>
  z
    .string()
    .min(1)
    .openapi({ description: `The ${what}'s id in the exported account (urn:uuid:<uuid>)`, example: 'urn:uuid:01935f6e-8a2b-7c3d-9e4f-5a6b7c8d9e0f' });
const text = () => z.string().nullish();
const strings = () => z.array(z.string()).nullish();

export const HeaderLine = z
  .object({
    type: z.literal('header'),
    format: z.literal(BUNDLE_FORMAT),
    version: z.number().int().openapi({ description: 'The format version; a change that is not additive makes a new one', example: BUNDLE_VERSION }),
    exported_at: time('When the export started'),
    tenant_id: z.string().nullish(),
    counts: z.record(z.string(), z.number().int()).nullish().openapi({ description: 'Records by type when the export started' }),
  })
  .openapi('BundleHeaderLine', { description: 'The first line of a bundle' });

export const SpaceLine = z
  .object({
    type: z.literal('space'),
    id: urn('space'),
    name: z.string().min(1),
    description: text(),
    tags: strings(),
    allowed_agent_ids: strings(),
    created_at: time(),
    updated_at: time(),
  })
  .openapi('BundleSpaceLine', { description: 'A context space the account owns; restored as POST /v1/context-spaces creates one' });

export const AgentLine = z
  .object({
    type: z.literal('agent'),
    agent_id: z.string().min(1),
    name: z.string().nullish(),
    description: text(),
    provider: z.enum(AGENT_PROVIDERS),
    model: z.string(),
    instructions: text(),
    capabilities: strings(),
    status: z.enum(AGENT_STATUSES).nullish(),
    created_at: time(),
    updated_at: time(),
  })
  .openapi('BundleAgentLine', { description: 'An agent; restored as POST /v1/agents creates one, then given its status' });

export const PackLine = z
  .object({
    type: z.literal('pack'),
    id: z.string().min(1),
    name: z.string().min(1),
    description: text(),
    tools: z.array(z.object({ name: z.string(), description: z.string() })).nullish(),
    risk_levels: z.record(z.string(), z.string()).nullish(),
    created_at: time(),
  })
  .openapi('BundlePackLine', { description: 'A capability pack; restored as POST /v1/capabilities creates one' });

export const PolicyLine = z
  .object({
    type: z.literal('policy'),
    id: z.string().min(1),
    name: z.string().min(1),
    agent_id: text(),
    description: text(),
    step_types: strings(),
    whitelisted_domains: strings(),
    rules: z.array(z.record(z.string(), z.unknown())).openapi({ description: 'As POST /v1/control/policies takes them (`PolicyRule`)' }),
    enabled: z.boolean().nullish(),
    created_at: time(),
    updated_at: time(),
  })
  .openapi('BundlePolicyLine', { description: 'A custom policy; restored as POST /v1/control/policies creates one (never replacing one of that name)' });

export const MemoryLine = z
  .object({
    type: z.literal('memory'),
    id: urn('memory'),
    text: z.string(),
    tags: strings(),
    importance: z.number().nullish(),
    confidence: z.number().nullish(),
    context: text(),
    agent_id: text(),
    space_id: z.string().nullish().openapi({ description: 'A space of the same bundle (urn:uuid:<uuid>)' }),
    source: z.object({ kind: z.string().nullish(), via: z.string().nullish(), ref: z.string().nullish() }).nullish().openapi({
      description:
        'Where the memory came from in the exported account (docs/memories.md#provenance-and-trust). An import stores it as `import` (trust `external`) and keeps only `ref`',
    }),
    trust: z.string().nullish().openapi({ description: 'Its trust in the exported account; an imported memory is `external`' }),
    created_at: time(),
    updated_at: time(),
    expires_at: time(),
    occurred_at: time('When what it records happened (version 1 files written before it lack it: `created_at` then)'),
  })
  .openapi('BundleMemoryLine', { description: 'A live memory; restored through the batch store path' });

const Entity = z.object({ name: z.string().min(1), type: z.string().nullish() });

export const TripleLine = z
  .object({
    type: z.literal('triple'),
    id: urn('triple'),
    subject: Entity,
    predicate: z.string().min(1),
    object: Entity,
    confidence: z.number().nullish(),
    metadata: z.record(z.string(), z.unknown()).nullish(),
    created_at: time(),
  })
  .openapi('BundleTripleLine', { description: 'A knowledge triple; restored as POST /v1/knowledge/triples creates one' });

export const WebhookLine = z
  .object({
    type: z.literal('webhook'),
    id: z.string().min(1),
    url: z.string().nullish(),
    events: strings(),
    active: z.boolean().nullish(),
    description: text(),
    format: z.string().nullish(),
    created_at: time(),
  })
  .openapi('BundleWebhookLine', { description: 'A webhook without its signing secret; counted in `skipped`, never restored' });

export const TrailerLine = z
  .object({
    type: z.literal('trailer'),
    lines: z.number().int().openapi({ description: 'The lines before the trailer' }),
    sha256: z.string().openapi({ description: 'Hex SHA-256 of every byte before the trailer, newlines included' }),
  })
  .openapi('BundleTrailerLine', { description: 'The last line of a bundle' });

/** The record lines (between header and trailer), by `type`. */
export const RECORD_LINES = {
  space: SpaceLine,
  agent: AgentLine,
  pack: PackLine,
  policy: PolicyLine,
  memory: MemoryLine,
  triple: TripleLine,
  webhook: WebhookLine,
} as const;
export type RecordType = keyof typeof RECORD_LINES;
/** A line as the export writes it: every field present (null where there is nothing). */
export type ExportedLine<T extends RecordType> = z.input<(typeof RECORD_LINES)[T]>;

/** Any line of a bundle: the export route's documented media type, one JSON object a line. */
export const BundleLine = z
  .union([HeaderLine, SpaceLine, AgentLine, PackLine, PolicyLine, MemoryLine, TripleLine, WebhookLine, TrailerLine])
  .openapi('BundleLine', { description: 'One line of a bundle (application/x-ndjson: one of these JSON objects a line), by `type`' });

/** `rules.0.match: Required`: what a refused line's message says. */
export const issuesOf = (error: z.ZodError) =>
  error.issues
    .slice(0, 5)
    .map((i) => `${i.path.join('.') || '(line)'}: ${i.message}`)
    .join('; ');
