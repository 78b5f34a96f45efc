import { routeOf } from '../../shared/platform/http/verb';
import { createSpaceVerb } from './verbs';
import { errors, json, jsonBody, keyRoute } from '../../shared/platform/http/openapi';
import * as s from './schemas';

const tags = ['Context spaces'];

export const createRoute = keyRoute({
  ...routeOf(createSpaceVerb),
  path: '/v1/context-spaces',
  tags,
  summary: 'Create a context space',
  description:
    "The caller becomes the owner. All tiers may create spaces; a non-empty `allowed_tenant_ids` needs Pro+ (403 FEATURE_NOT_AVAILABLE). Storing memories into a space (`space_id` on POST /v1/memories) needs Pro+. Tenants and teams in `allowed_tenant_ids` read the space; with `team_write: true` (default false) members of the granted teams with role owner, admin or member also store into it (the memories are the owner's and count against the owner's quota), while `readonly` members and tenants listed by id still only read.",
  responses: { 201: json(s.SpaceSchema, 'Space created'), ...errors(400, 403) },
});

export const listRoute = keyRoute({
  operationId: 'spaces.list',
  confinable: true,
  method: 'get',
  path: '/v1/context-spaces',
  tags,
  summary: 'List owned and granted context spaces',
  description:
    'Spaces the caller owns, is named in (`allowed_tenant_ids`), or holds an accepted, live space share of; deleted spaces never appear. Oldest first.',
  request: { query: s.SpaceListQuery },
  responses: { 200: json(s.SpaceListResponse, 'Spaces'), ...errors(400) },
});

export const getRoute = keyRoute({
  operationId: 'spaces.get',
  confinable: true,
  method: 'get',
  path: '/v1/context-spaces/{space_id}',
  tags,
  summary: 'Get a context space',
  description:
    "`space_id` may be `urn:uuid:<uuid>` or the bare uuid. 403 FORBIDDEN when the space exists but is neither yours nor granted to you; 404 when unknown or deleted. A read by a non-owner is recorded in the owner's audit trail (`space.cross_tenant_read`).",
  request: { params: s.SpaceParams },
  responses: { 200: json(s.SpaceSchema, 'The space'), ...errors(400, 403, 404) },
});

export const updateRoute = keyRoute({
  operationId: 'spaces.update',
  confinable: true,
  method: 'put',
  path: '/v1/context-spaces/{space_id}',
  tags,
  summary: 'Update a context space (owner only)',
  description:
    "Any of the fields; omitted ones keep their value, `description: null` clears it. Returns the updated space. Turning `team_write` off, or removing a team from `allowed_tenant_ids`, ends its members' writes at once.",
  request: { params: s.SpaceParams, body: jsonBody(s.UpdateSpaceBody) },
  responses: { 200: json(s.SpaceSchema, 'The updated space'), ...errors(400, 403, 404) },
});

export const deleteRoute = keyRoute({
  operationId: 'spaces.delete',
  confinable: true,
  method: 'delete',
  path: '/v1/context-spaces/{space_id}',
  tags,
  summary: 'Delete a context space (owner only)',
  description: 'Soft delete: the space disappears from every read and its shares stop granting access. Its memories are not deleted.',
  request: { params: s.SpaceParams },
  responses: { 204: { description: 'Deleted' }, ...errors(400, 403, 404) },
});

export const memoriesRoute = keyRoute({
  operationId: 'spaces.memories',
  confinable: true,
  method: 'get',
  path: '/v1/context-spaces/{space_id}/memories',
  tags,
  summary: 'List or search the memories of a space',
  description:
    "The owner's live memories in the space, newest first; with `q`, ranked by cosine similarity with `score` and `similarity` on each item. Readable by the owner and by granted tenants; a non-owner read is recorded in the owner's audit trail.",
  request: { params: s.SpaceParams, query: s.SpaceMemoriesQuery },
  responses: { 200: json(s.SpaceMemoriesResponse, 'Memories of the space'), ...errors(400, 403, 404) },
});
