import { toUrn } from '../platform/contract/ids';
import { z } from '@hono/zod-openapi';
import { sql } from 'drizzle-orm';

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
  version: number;
  created_at: Date | string;
  updated_at: Date | string;
}

export const COLUMNS = sql.raw(
  'm.id, m.tenant_id, m.observation, m.tags, m.importance, m.confidence, m.recall_count, m.last_recalled_at, m.superseded_by, m.context, m.agent_id, m.space_id, m.content_hash, m.expires_at, m.version, m.created_at, m.updated_at',
);

const isoOf = (v: Date | string | null) => (v === null ? null : new Date(v).toISOString());

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
    created_at: isoOf(r.created_at)!,
    updated_at: isoOf(r.updated_at)!,
  };
}
export type MemoryDto = ReturnType<typeof toMemoryDto>;

export const vectorLiteral = (v: number[]) => `[${v.join(',')}]`;

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
    created_at: z.string(),
    updated_at: z.string(),
  })
  .openapi('Memory');
