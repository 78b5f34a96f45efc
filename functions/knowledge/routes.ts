import { routeOf } from '../../shared/platform/http/verb';
import { createTripleVerb } from './verbs';
import { MENTION_RULE } from '../../shared/memory/entities';
import { errors, json, keyRoute } from '../../shared/platform/http/openapi';
import { PATH_FANOUT, PATH_FRONTIER } from './queries';
import * as s from './schemas';

const tags = ['Knowledge graph'];
const feature = 'knowledge_graph' as const;

export const createTripleRoute = keyRoute({
  ...routeOf(createTripleVerb),
  path: '/v1/knowledge/triples',
  tags,
  summary: 'Add a subject-predicate-object triple',
  description: `Entities are found by name, and created when missing: names are trimmed, whitespace runs become one space, and they are lowercased. An entity is its name: a triple that names an existing entity reuses it whatever type it gives or omits; \`subject_type\` and \`object_type\` set the type of an entity that is created (default \`${s.DEFAULT_TYPE}\`) or still has the default type, and never change another type. Creating the same entity from parallel requests yields one entity. The same triple may be added more than once (from different sources, say); each is its own triple. \`source_memory_id\` must name a live memory of yours, else 404 (the same answer for an id that names nothing and another tenant's memory); when that memory is later deleted, purged after its TTL or removed by a rollback, the triple stays and its \`source_memory_id\` reads null (a rollback that brings the memory back does not restore it).`,
  responses: { 201: json(s.TripleSchema, 'The triple, with both entities'), ...errors(404) },
});

export const listTriplesRoute = keyRoute({
  operationId: 'knowledge.listTriples',
  feature,
  method: 'get',
  path: '/v1/knowledge/triples',
  tags,
  summary: 'Triples, newest first',
  description:
    '`subject` and `object` match entity names, case-insensitively; `predicate` matches exactly; `source_memory_id` finds the triples taken from a memory.',
  request: { query: s.TripleListQuery },
  responses: { 200: json(s.TripleList, 'A page of triples') },
});

export const getTripleRoute = keyRoute({
  operationId: 'knowledge.getTriple',
  feature,
  method: 'get',
  path: '/v1/knowledge/triples/{triple_id}',
  tags,
  summary: 'A triple',
  request: { params: s.TripleParams },
  responses: { 200: json(s.TripleSchema, 'The triple'), ...errors(404) },
});

export const deleteTripleRoute = keyRoute({
  operationId: 'knowledge.deleteTriple',
  feature,
  method: 'delete',
  path: '/v1/knowledge/triples/{triple_id}',
  tags,
  summary: 'Delete a triple (its entities stay)',
  request: { params: s.TripleParams },
  responses: { 200: json(s.DeletedTriple, 'Deleted'), ...errors(404) },
});

export const listEntitiesRoute = keyRoute({
  operationId: 'knowledge.listEntities',
  feature,
  method: 'get',
  path: '/v1/knowledge/entities',
  tags,
  summary: 'Entities in name order, with their triple counts',
  description: '`q` is a case-insensitive prefix of the name; `entity_type` an exact type. Ordered by name.',
  request: { query: s.EntityListQuery },
  responses: { 200: json(s.EntityList, 'A page of entities') },
});

export const getEntityRoute = keyRoute({
  operationId: 'knowledge.getEntity',
  feature,
  method: 'get',
  path: '/v1/knowledge/entities/{entity_id}',
  tags,
  summary: 'An entity with its neighbourhood',
  description: `The entity, its newest triples as subject and as object (\`limit\` each), how many triples name it, and the newest memories that mention it. ${MENTION_RULE}`,
  request: { params: s.EntityParams, query: s.EntityQuery },
  responses: { 200: json(s.EntityDetail, 'The entity and its connections'), ...errors(404) },
});

export const deleteEntityRoute = keyRoute({
  operationId: 'knowledge.deleteEntity',
  feature,
  method: 'delete',
  path: '/v1/knowledge/entities/{entity_id}',
  tags,
  summary: 'Delete an entity and every triple that names it',
  description: 'The memories that mention the entity keep their text and lose the link (an `unlink` event in their replay lifecycle).',
  request: { params: s.EntityParams },
  responses: { 200: json(s.DeletedEntity, 'Deleted, with the number of triples removed'), ...errors(404) },
});

export const pathsRoute = keyRoute({
  operationId: 'knowledge.paths',
  feature,
  method: 'get',
  path: '/v1/knowledge/paths',
  tags,
  summary: 'Shortest paths between two entities',
  description: `Up to ${s.MAX_PATHS} simple paths (no entity twice) of at most \`max_hops\` triples from \`from\` to \`to\`, shortest first, following triples in either direction. \`from\` and \`to\` are entity ids (a value shaped like a uuid, with or without \`urn:uuid:\`, is taken as an id) or names; an unknown one is 404; the same entity at both ends is 400. The search is bounded so it stays fast on large graphs: from each entity it follows the newest ${PATH_FANOUT} triples in each direction, and it keeps at most ${PATH_FRONTIER} partial paths from each end; in very dense neighbourhoods a path beyond those bounds can be missed (an empty list means none was found within them).`,
  request: { query: s.PathsQuery },
  responses: { 200: json(s.PathsResponse, 'The paths found'), ...errors(404) },
});
