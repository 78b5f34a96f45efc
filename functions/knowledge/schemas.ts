import { z } from '@hono/zod-openapi';
import { ENTITY_NAME_MAX } from '../../shared/memory/entities';
import { PageQuery, paging } from '../../shared/platform/data/pagination';
import { Metadata, UrnId } from '../../shared/platform/contract/params';
import type { ConnectionRow, EntityRow, StepRow, TripleRow } from './queries';

export const DEFAULT_TYPE = 'concept';
export const TYPE_MAX = 50;
export const PREDICATE_MAX = 100;
export const LIST_MAX = 500;
export const MAX_HOPS = 4;
export const MAX_PATHS = 10;

const ENTITY_EXAMPLE = 'urn:uuid:01935f80-3b4c-7d5e-8f6a-7b8c9d0e1f2a';
const OTHER_ENTITY_EXAMPLE = 'urn:uuid:01935f81-4c5d-7e6f-9a0b-8c9d0e1f2a3b';
const TRIPLE_EXAMPLE = 'urn:uuid:01935f82-5d6e-7f80-a1b2-9c0d1e2f3a4b';
const MEMORY_EXAMPLE = 'urn:uuid:01935f6e-8a2b-7c3d-9e4f-5a6b7c8d9e0f';
const TIME = '2026-11-22T10:00:00.000Z';

const names = 'Stored trimmed, with runs of whitespace as one space, and lowercased; so `Ada  Lovelace` and `ada lovelace` are one entity.';
const Name = (description: string, example: string) =>
  z
    .string()
    .trim()
    .min(1)
    .max(ENTITY_NAME_MAX)
    .openapi({ description: `${description}, 1 to ${ENTITY_NAME_MAX} characters. ${names}`, example });
const Type = (description: string) =>
  z
    .string()
    .trim()
    .min(1)
    .max(TYPE_MAX)
    .optional()
    .openapi({
      description: `${description}, 1 to ${TYPE_MAX} characters, lowercased; default \`${DEFAULT_TYPE}\`. An entity is unique by name: the type is set when it is created or while it still has the default type.`,
      example: 'person',
    });
const Predicate = z
  .string()
  .trim()
  .min(1)
  .max(PREDICATE_MAX)
  .openapi({ description: `1 to ${PREDICATE_MAX} characters, stored as given (trimmed); filters match it exactly`, example: 'works_at' });
const Confidence = z.number().min(0).max(1).openapi({ description: '0.0 to 1.0', example: 0.9 });

export const CreateTripleBody = z
  .object({
    subject: Name('Subject entity name', 'Ada Lovelace'),
    predicate: Predicate,
    object: Name('Object entity name', 'Analytical Engine'),
    confidence: Confidence.default(1),
    source_memory_id: UrnId(
      'A memory of yours this fact came from (404 when there is no such memory). When that memory is later deleted, purged after its TTL or removed by a rollback, the triple stays and this becomes null',
    ).optional(),
    subject_type: Type('Type of the subject entity'),
    object_type: Type('Type of the object entity'),
    metadata: Metadata('Stored with the triple.', { extracted_by: 'billing-agent' }).default({}),
  })
  .openapi('CreateTripleRequest', {
    example: {
      subject: 'Ada Lovelace',
      predicate: 'worked_on',
      object: 'Analytical Engine',
      confidence: 0.9,
      subject_type: 'person',
      object_type: 'machine',
      metadata: { extracted_by: 'research-agent' },
    },
  });

export const TripleParams = z.object({ triple_id: UrnId('The triple (urn:uuid:<uuid>)').openapi({ example: TRIPLE_EXAMPLE }) });
export const EntityParams = z.object({ entity_id: UrnId('The entity (urn:uuid:<uuid>)').openapi({ example: ENTITY_EXAMPLE }) });

const NameFilter = (description: string) =>
  z
    .string()
    .trim()
    .min(1)
    .max(ENTITY_NAME_MAX)
    .optional()
    .openapi({ description: `${description} case-insensitive, normalized as names are`, example: 'ada lovelace' });

export const TripleListQuery = PageQuery({ max: LIST_MAX, default: 50 }).extend({
  subject: NameFilter('Only triples whose subject has this name'),
  predicate: Predicate.optional().openapi({ description: 'Only triples with exactly this predicate' }),
  object: NameFilter('Only triples whose object has this name'),
  source_memory_id: UrnId('Only triples taken from this memory').optional(),
});

export const EntityListQuery = PageQuery({ max: LIST_MAX, default: 50 }).extend({
  entity_type: z.string().trim().min(1).max(TYPE_MAX).optional().openapi({ description: 'Only entities of this type (case-insensitive)', example: 'person' }),
  q: z.string().trim().min(1).max(ENTITY_NAME_MAX).optional().openapi({ description: 'Case-insensitive name prefix', example: 'ada' }),
});

export const EntityQuery = z.object({
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(LIST_MAX)
    .default(50)
    .openapi({
      description: `Newest triples shown in each of as_subject and as_object, 1 to ${LIST_MAX} (default 50); total_connections counts them all`,
      example: 50,
    }),
});

export const PathsQuery = z.object({
  from: z.string().trim().min(1).max(ENTITY_NAME_MAX).openapi({ description: 'Start: an entity_id, or an entity name', example: 'ada lovelace' }),
  to: z.string().trim().min(1).max(ENTITY_NAME_MAX).openapi({ description: 'End: an entity_id or an entity name', example: 'charles babbage' }),
  max_hops: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_HOPS)
    .default(3)
    .openapi({ description: `Longest path, in triples, 1 to ${MAX_HOPS} (default 3)`, example: 3 }),
});

export const EntityRef = z
  .object({
    entity_id: z.string().openapi({ example: ENTITY_EXAMPLE }),
    name: z.string().openapi({ example: 'ada lovelace' }),
    entity_type: z.string().openapi({ example: 'person' }),
  })
  .openapi('KnowledgeEntityRef');

export const TripleSchema = z
  .object({
    triple_id: z.string().openapi({ example: TRIPLE_EXAMPLE }),
    subject: EntityRef,
    predicate: z.string().openapi({ example: 'worked_on' }),
    object: EntityRef,
    confidence: z.number().openapi({ example: 0.9 }),
    source_memory_id: z.string().nullable().openapi({
      description: 'Null when none was given, or once that memory was deleted, purged or rolled away (or its TTL ran out)',
      example: MEMORY_EXAMPLE,
    }),
    metadata: z.record(z.string(), z.unknown()).openapi({ example: { extracted_by: 'research-agent' } }),
    created_at: z.string().openapi({ example: TIME }),
  })
  .openapi('KnowledgeTriple');

export const TriplePaging = paging({ totals: ['total'], hasMore: true });
export const TripleList = z.object({ triples: z.array(TripleSchema), ...TriplePaging.fields }).openapi('KnowledgeTripleList');

export const EntitySchema = EntityRef.extend({
  metadata: z.record(z.string(), z.unknown()).openapi({ example: {} }),
  created_at: z.string().openapi({ example: TIME }),
}).openapi('KnowledgeEntity');

export const EntityPaging = paging({ totals: ['total'], hasMore: true });
export const EntityList = z
  .object({
    entities: z.array(
      EntitySchema.extend({ triple_count: z.number().int().openapi({ description: 'Triples naming the entity as subject or object', example: 4 }) }),
    ),
    ...EntityPaging.fields,
  })
  .openapi('KnowledgeEntityList');

const Connection = {
  triple_id: z.string().openapi({ example: TRIPLE_EXAMPLE }),
  predicate: z.string().openapi({ example: 'worked_on' }),
  confidence: z.number().openapi({ example: 0.9 }),
  created_at: z.string().openapi({ example: TIME }),
};

export const EntityDetail = z
  .object({
    entity: EntitySchema,
    as_subject: z
      .array(z.object({ ...Connection, object: EntityRef }))
      .openapi({ description: 'Triples with this entity as subject, newest first (at most `limit`)' }),
    as_object: z
      .array(z.object({ ...Connection, subject: EntityRef }))
      .openapi({ description: 'Triples with this entity as object, newest first (at most `limit`)' }),
    total_connections: z.number().int().openapi({
      description: 'All triples with this entity as subject plus all with it as object (a triple from the entity to itself counts in both)',
      example: 2,
    }),
    mentioned_in: z
      .array(z.string())
      .openapi({ description: 'The newest memories (at most `limit`) whose text names this entity, linked when they were stored', example: [MEMORY_EXAMPLE] }),
    mention_count: z.number().int().openapi({ description: 'Live memories linked to this entity', example: 1 }),
  })
  .openapi('KnowledgeEntityDetail');

export const DeletedTriple = z.object({ deleted: z.literal(true) }).openapi('KnowledgeTripleDeleted');
export const DeletedEntity = z
  .object({
    deleted: z.literal(true),
    triples_removed: z.number().int().openapi({ description: 'Triples that named the entity, deleted with it', example: 3 }),
  })
  .openapi('KnowledgeEntityDeleted');

const Step = z.object({
  triple_id: z.string().openapi({ example: TRIPLE_EXAMPLE }),
  subject: EntityRef,
  predicate: z.string().openapi({ example: 'worked_with' }),
  object: EntityRef,
});

export const PathsResponse = z
  .object({
    from: EntityRef,
    to: EntityRef.openapi({ example: { entity_id: OTHER_ENTITY_EXAMPLE, name: 'charles babbage', entity_type: 'person' } }),
    paths: z.array(z.array(Step)).openapi({
      description: 'Each path is its triples in order from `from` to `to`; a triple walked against its direction keeps its own subject and object',
    }),
    total: z
      .number()
      .int()
      .openapi({ description: `Paths returned (at most ${MAX_PATHS})`, example: 1 }),
  })
  .openapi('KnowledgePaths');

const iso = (v: Date | string) => new Date(v).toISOString();

export const toRef = (e: { entity_id: string; name: string; entity_type: string }): z.infer<typeof EntityRef> => ({
  entity_id: e.entity_id,
  name: e.name,
  entity_type: e.entity_type,
});

export const toEntityDto = (e: EntityRow): z.infer<typeof EntitySchema> => ({ ...toRef(e), metadata: e.metadata ?? {}, created_at: iso(e.created_at) });

export const toStepDto = (t: StepRow): z.infer<typeof Step> => ({
  triple_id: t.triple_id,
  subject: { entity_id: t.s_id, name: t.s_name, entity_type: t.s_type },
  predicate: t.predicate,
  object: { entity_id: t.o_id, name: t.o_name, entity_type: t.o_type },
});

export const toTripleDto = (t: TripleRow): z.infer<typeof TripleSchema> => ({
  ...toStepDto(t),
  confidence: Number(t.confidence),
  source_memory_id: t.source_memory_id,
  metadata: t.metadata ?? {},
  created_at: iso(t.created_at),
});

export const toConnection = (c: ConnectionRow) => ({
  triple_id: c.triple_id,
  predicate: c.predicate,
  confidence: Number(c.confidence),
  created_at: iso(c.created_at),
  other: { entity_id: c.other_id, name: c.other_name, entity_type: c.other_type },
});
