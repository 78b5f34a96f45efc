import { toUrn } from '../platform/contract/ids';
import { SOURCE_KINDS, SOURCE_VIAS, type SourceKind, type SourceVia, TRUST_LEVELS, type Trust } from './provenance';
import { z } from '@hono/zod-openapi';
import { sql } from '../platform/data/db';

/** A memories row as raw SQL returns it (alias `m`, columns in `COLUMNS`). */
export interface MemoryRow {
  id: string;
  tenant_id: string;
  observation: string;
  tags: string[];
  importance: number;
  confidence: number;
  recall_count: number;
  last_recalled_at: Date | string | null;
  superseded_by: string | null;
  context: string | null;
  agent_id: string | null;
  space_id: string | null;
  content_hash: string;
  expires_at: Date | string | null;
  source_kind: SourceKind;
  source_via: SourceVia;
  source_key_id: string | null;
  source_ref: string | null;
  trust: Trust;
  /** Null: the memory's `created_at`. */
  occurred_at: Date | string | null;
  version: number;
  created_at: Date | string;
  updated_at: Date | string;
}

export const COLUMNS = sql.raw(
  'm.id, m.tenant_id, m.observation, m.tags, m.importance, m.confidence, m.recall_count, m.last_recalled_at, m.superseded_by, m.context, m.agent_id, m.space_id, m.content_hash, m.expires_at, m.source_kind, m.source_via, m.source_key_id, m.source_ref, m.trust, m.occurred_at, m.version, m.created_at, m.updated_at',
);

/**
 * The columns a search answer reads of each hit (functions/memories/search.ts): the rest (context,
 * hash, version, the other times) would travel and be parsed for every hit for nothing, a context
 * of any size among them.
 */
export const HIT_COLUMNS = sql.raw(
  'm.id, m.tenant_id, m.observation, m.tags, m.importance, m.recall_count, m.agent_id, m.space_id, m.source_kind, m.source_via, m.source_key_id, m.source_ref, m.trust, m.occurred_at, m.created_at',
);
/** A row of HIT_COLUMNS. */
export type HitRow = Pick<
  MemoryRow,
  | 'id'
  | 'tenant_id'
  | 'observation'
  | 'tags'
  | 'importance'
  | 'recall_count'
  | 'agent_id'
  | 'space_id'
  | 'source_kind'
  | 'source_via'
  | 'source_key_id'
  | 'source_ref'
  | 'trust'
  | 'occurred_at'
  | 'created_at'
>;

const isoOf = (v: Date | string | null) => (v === null ? null : new Date(v).toISOString());

/** A memory's `source`, `trust` and `occurred_at` as answers carry them. */
export function provenanceOf(
  r: Pick<MemoryRow, 'source_kind' | 'source_via' | 'source_key_id' | 'agent_id' | 'source_ref' | 'trust' | 'occurred_at' | 'created_at'>,
) {
  return {
    source: { kind: r.source_kind, via: r.source_via, key_id: r.source_key_id, agent_id: r.agent_id, ref: r.source_ref },
    trust: r.trust,
    occurred_at: isoOf(r.occurred_at ?? r.created_at)!,
  };
}

/** The API shape of a memory; also the snapshot stored in memory events. */
export function toMemoryDto(r: MemoryRow) {
  return {
    uuid: toUrn(r.id),
    observation: r.observation,
    tags: r.tags ?? [],
    importance: Number(r.importance),
    confidence: Number(r.confidence),
    recall_count: Number(r.recall_count),
    last_recalled_at: isoOf(r.last_recalled_at),
    superseded_by: r.superseded_by ? toUrn(r.superseded_by) : null,
    context: r.context,
    agent_id: r.agent_id,
    space_id: r.space_id ? toUrn(r.space_id) : null,
    hash: r.content_hash,
    owner_tenant_id: r.tenant_id,
    expires_at: isoOf(r.expires_at),
    ...provenanceOf(r),
    created_at: isoOf(r.created_at)!,
    updated_at: isoOf(r.updated_at)!,
  };
}
export type MemoryDto = ReturnType<typeof toMemoryDto>;

const vectorTexts = new WeakMap<readonly number[], string>();
/**
 * A vector's text for a `::live_vector` cast (migrations/0056). Kept per vector (a stored vector is never changed in
 * place: toStoredVector makes a new one): a store writes its vector's text into its link probe and
 * into its insert, and a model's vector of 512 doubles takes tens of microseconds to write out.
 */
export const vectorLiteral = (v: readonly number[]): string => {
  let text = vectorTexts.get(v);
  if (text === undefined) vectorTexts.set(v, (text = `[${v.join(',')}]`));
  return text;
};

export const SourceSchema = z
  .object({
    kind: z.enum(SOURCE_KINDS).openapi({
      description:
        "Who wrote it: the account's people (`user`), an agent key (`agent`), tool output (`tool`), an import, a share of another account (as the reader sees it), or engram itself (`system`)",
    }),
    via: z.enum(SOURCE_VIAS).openapi({ description: 'The way in: the HTTP API, MCP, the console, an import or a job' }),
    key_id: z.string().nullable().openapi({ description: 'The key that wrote it' }),
    agent_id: z.string().nullable(),
    ref: z.string().nullable().openapi({ description: 'What the writer said it came from (a URL, a message id)' }),
  })
  .openapi('MemorySource');

export const TrustSchema = z.enum(TRUST_LEVELS).openapi({
  description:
    "`verified` (the account's own people) > `agent` (agent keys) > `external` (imports, shares, tool output); a memory derived from others takes the lowest of them",
});

/** The OpenAPI shape of `toMemoryDto`. */
export const MemorySchema = z
  .object({
    uuid: z.string(),
    observation: z.string(),
    tags: z.array(z.string()),
    importance: z.number().int(),
    confidence: z.number(),
    recall_count: z.number().int(),
    last_recalled_at: z.string().nullable(),
    superseded_by: z.string().nullable(),
    context: z.string().nullable(),
    agent_id: z.string().nullable(),
    space_id: z.string().nullable(),
    hash: z.string(),
    owner_tenant_id: z.string(),
    expires_at: z.string().nullable(),
    source: SourceSchema,
    trust: TrustSchema,
    occurred_at: z.string().openapi({ description: 'When what the memory records happened in the world; `created_at` unless the writer said otherwise' }),
    created_at: z.string().openapi({ description: 'When engram stored it; audit, replay and rollback follow this time' }),
    updated_at: z.string(),
  })
  .openapi('Memory');
