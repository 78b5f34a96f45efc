import { PageQuery, paging } from '../../shared/platform/data/pagination';
import { UrnId } from '../../shared/platform/contract/params';
import { toUrn } from '../../shared/platform/contract/ids';
import { z } from '@hono/zod-openapi';
import { MemorySchema } from '../../shared/memory/rows';

export const MAX_NAME = 100;
export const MAX_DESCRIPTION = 500;
export const MAX_AGENTS = 10;
export const MAX_TENANTS = 100;
export const MAX_TAGS = 50;
export const MAX_TAG_LENGTH = 64;

/** A tenant id (`ten_...`) or a team (`team:<team_id>`, resolved once teams exist). */
const TENANT_REF = /^(ten_[0-9A-Za-z]{8,64}|team:[0-9A-Za-z_-]{1,80})$/;

const dedupe = <T>(xs: T[]) => [...new Set(xs)];

const Name = z.string().trim().min(1).max(MAX_NAME).openapi({ example: 'billing-research' });
const Description = z.string().trim().max(MAX_DESCRIPTION).nullable().openapi({ example: 'What the billing agents learned' });
const AgentIds = z
  .array(z.string().trim().min(1).max(128))
  .max(MAX_AGENTS)
  .transform(dedupe)
  .openapi({ description: 'Agents that may store into the space (empty: any)', example: ['billing-agent'] });
const TenantIds = z
  .array(z.string().trim().regex(TENANT_REF, 'must be a tenant id (ten_...) or team:<team_id>'))
  .max(MAX_TENANTS)
  .transform(dedupe)
  .openapi({
    description:
      'Other tenants (`ten_...`) or teams (`team:<team_id>`, every member) that may read the space; with `team_write`, team members who are not `readonly` also store into it. Non-empty needs Pro+',
    example: ['ten_2aB9xQ7mLp0cRt5VwZ1yK8'],
  });
const TeamWrite = z.boolean().openapi({
  description:
    "Let members of the teams granted in `allowed_tenant_ids` (`team:<team_id>`) with role owner, admin or member store memories into the space (they land in the owner's store, on the owner's quota). Tenants listed by id and `readonly` members only read. Default false",
  example: true,
});
const Tags = z
  .array(z.string().trim().min(1).max(MAX_TAG_LENGTH))
  .max(MAX_TAGS)
  .transform(dedupe)
  .openapi({ example: ['billing'] });

export const CreateSpaceBody = z
  .object({
    name: Name,
    description: Description.optional(),
    allowed_agent_ids: AgentIds.default([]),
    allowed_tenant_ids: TenantIds.default([]),
    tags: Tags.default([]),
    team_write: TeamWrite.default(false),
  })
  .openapi('CreateSpaceRequest', {
    example: { name: 'billing-research', description: 'What the billing agents learned', allowed_agent_ids: ['billing-agent'], tags: ['billing'] },
  });

export const UpdateSpaceBody = z
  .object({
    name: Name.optional(),
    description: Description.optional().openapi({ description: 'null clears it' }),
    allowed_agent_ids: AgentIds.optional(),
    allowed_tenant_ids: TenantIds.optional(),
    tags: Tags.optional(),
    team_write: TeamWrite.optional(),
  })
  .refine((b) => Object.values(b).some((v) => v !== undefined), {
    message: 'send at least one of name, description, allowed_agent_ids, allowed_tenant_ids, tags, team_write',
  })
  .openapi('UpdateSpaceRequest', { example: { description: 'What the billing and invoicing agents learned', tags: ['billing', 'invoices'] } });

export const SpaceParams = z.object({
  space_id: UrnId('The context space (urn:uuid:<uuid> or the bare uuid)'),
});

export const SpaceSchema = z
  .object({
    space_id: z.string().openapi({ example: 'urn:uuid:01935f6e-8a2b-7c3d-9e4f-5a6b7c8d9e0f' }),
    name: z.string(),
    description: z.string().nullable(),
    owner_tenant_id: z.string(),
    allowed_agent_ids: z.array(z.string()),
    allowed_tenant_ids: z.array(z.string()).openapi({
      description: 'The full list for the owner; other callers see only the entries that name them',
    }),
    tags: z.array(z.string()),
    team_write: z.boolean().openapi({
      description: 'Whether members (not readonly) of the teams granted in allowed_tenant_ids may store memories into the space',
    }),
    created_at: z.string(),
    updated_at: z.string(),
    memory_count: z.number().int().openapi({ description: 'Live (unexpired) memories of the owner in this space' }),
    access: z.enum(['owner', 'allowed_tenant', 'share']).openapi({
      description: 'Why the caller sees the space: it owns it, it is in allowed_tenant_ids, or it accepted a share of it',
    }),
  })
  .openapi('ContextSpace');

export const SpaceListQuery = PageQuery({ max: 1000, default: 100 });
export const ListPaging = paging({ totals: ['total_count'], hasMore: true });

export const SpaceListResponse = z.object({ spaces: z.array(SpaceSchema), ...ListPaging.fields }).openapi('ContextSpaceList');

const csv = z
  .string()
  .max(2_000)
  .transform((v) =>
    dedupe(
      v
        .split(',')
        .map((t) => t.trim())
        .filter(Boolean),
    ),
  )
  .pipe(z.array(z.string().max(MAX_TAG_LENGTH)).max(MAX_TAGS));

export const SpaceMemoriesQuery = z
  .object({
    q: z
      .string()
      .trim()
      .min(1)
      .max(2_000)
      .optional()
      .openapi({ description: 'Semantic query: results are ordered by cosine similarity and carry score and similarity' }),
    tags: csv.optional().openapi({ description: 'Comma-separated; a memory matches if it has any of them' }),
    agent_id: z.string().min(1).max(128).optional().openapi({ description: 'Only memories stored by this agent' }),
  })
  .extend(PageQuery({ max: 1000, default: 100 }).shape);
export const MemoriesPaging = paging({ totals: ['total_count'], hasMore: true });

export const SpaceMemorySchema = MemorySchema.extend({
  score: z.number().optional().openapi({ description: 'With q: equals similarity (no recency blend here)' }),
  similarity: z.number().optional().openapi({ description: 'With q: cosine similarity, clamped to [0,1]' }),
}).openapi('SpaceMemory');

export const SpaceMemoriesResponse = z
  .object({
    memories: z.array(SpaceMemorySchema),
    ...MemoriesPaging.fields,
    filters: z.object({
      space_id: z.string(),
      q: z.string().nullable(),
      tags: z.array(z.string()).nullable(),
      agent_id: z.string().nullable(),
    }),
  })
  .openapi('ContextSpaceMemories');

export interface SpaceRow {
  id: string;
  owner_tenant_id: string;
  name: string;
  description: string | null;
  allowed_agent_ids: string[];
  allowed_tenant_ids: string[];
  tags: string[];
  team_write: boolean;
  created_at: Date | string;
  updated_at: Date | string;
  deleted_at: Date | string | null;
  memory_count?: number | string;
}

export type Access = z.infer<typeof SpaceSchema>['access'];

export function toSpaceDto(r: SpaceRow, viewer: string, access: Access): z.infer<typeof SpaceSchema> {
  return {
    space_id: toUrn(r.id),
    name: r.name,
    description: r.description,
    owner_tenant_id: r.owner_tenant_id,
    allowed_agent_ids: r.allowed_agent_ids ?? [],
    allowed_tenant_ids: access === 'owner' ? (r.allowed_tenant_ids ?? []) : (r.allowed_tenant_ids ?? []).filter((t) => t === viewer),
    tags: r.tags ?? [],
    team_write: r.team_write ?? false,
    created_at: new Date(r.created_at).toISOString(),
    updated_at: new Date(r.updated_at).toISOString(),
    memory_count: Number(r.memory_count ?? 0),
    access,
  };
}
