import { errors as errorsOf, json, jsonBody, keyRoute } from '../../shared/platform/http/openapi';
import * as s from './schemas';

const tags = ['Teams'];
const roles = 'Owner and admins manage members; see the role table in docs/teams-and-webhooks.md#roles.';

export const createRoute = keyRoute({
  operationId: 'teams.create',
  feature: 'teams',
  method: 'post',
  path: '/v1/teams',
  tags,
  summary: 'Create a team (you become its owner)',
  request: { body: jsonBody(s.CreateTeamBody) },
  responses: { 201: json(s.TeamSchema, 'The team, with you as owner') },
});

export const listRoute = keyRoute({
  operationId: 'teams.list',
  feature: 'teams',
  method: 'get',
  path: '/v1/teams',
  tags,
  summary: 'Teams you own or belong to, oldest first',
  request: { query: s.ListQuery },
  responses: { 200: json(s.TeamList, 'A page of teams with their members') },
});

export const getRoute = keyRoute({
  operationId: 'teams.get',
  feature: 'teams',
  method: 'get',
  path: '/v1/teams/{team_id}',
  tags,
  summary: 'A team with its members',
  description: 'Any member may read the team. A team you are not in is 404, whether or not it exists.',
  request: { params: s.TeamParams },
  responses: { 200: json(s.TeamSchema, 'The team'), ...errorsOf(404) },
});

export const renameRoute = keyRoute({
  operationId: 'teams.rename',
  feature: 'teams',
  method: 'put',
  path: '/v1/teams/{team_id}',
  tags,
  summary: 'Rename a team (owner or admin)',
  description: roles,
  request: { params: s.TeamParams, body: jsonBody(s.RenameTeamBody) },
  responses: { 200: json(s.TeamSchema, 'The renamed team'), ...errorsOf(404) },
});

export const deleteRoute = keyRoute({
  operationId: 'teams.delete',
  feature: 'teams',
  method: 'delete',
  path: '/v1/teams/{team_id}',
  tags,
  summary: 'Delete a team (owner only)',
  request: { params: s.TeamParams },
  responses: { 204: { description: 'Deleted, with its members and invitations' }, ...errorsOf(404) },
});

export const inviteRoute = keyRoute({
  operationId: 'teams.invite',
  feature: 'teams',
  method: 'post',
  path: '/v1/teams/{team_id}/invite',
  tags,
  summary: 'Invite by e-mail (owner or admin)',
  description: `Mails a single-use invitation valid 7 days, bound to the address: only the tenant whose verified e-mail it is can join with it. The answer is the same whether or not the address has an account. ${roles}`,
  request: { params: s.TeamParams, body: jsonBody(s.InviteBody) },
  responses: { 201: json(s.InviteResponse, 'Invitation mailed'), ...errorsOf(404) },
});

export const joinRoute = keyRoute({
  operationId: 'teams.join',
  feature: 'teams',
  method: 'post',
  path: '/v1/teams/join',
  tags,
  summary: 'Join a team with an invitation',
  description: 'An invitation that is unknown, used, expired, or sent to another (or an unverified) address is 400 INVALID_TOKEN.',
  request: { body: jsonBody(s.JoinBody) },
  responses: { 200: json(s.JoinResponse, 'Joined') },
});

export const roleRoute = keyRoute({
  operationId: 'teams.changeRole',
  feature: 'teams',
  method: 'put',
  path: '/v1/teams/{team_id}/members/{tenant_id}',
  tags,
  summary: "Change a member's role (owner or admin)",
  description: `The owner cannot be demoted, and nobody can be made owner. ${roles}`,
  request: { params: s.MemberParams, body: jsonBody(s.RoleBody) },
  responses: { 200: json(s.TeamSchema, 'The team with the new role'), ...errorsOf(404) },
});

export const removeRoute = keyRoute({
  operationId: 'teams.removeMember',
  feature: 'teams',
  method: 'delete',
  path: '/v1/teams/{team_id}/members/{tenant_id}',
  tags,
  summary: 'Remove a member (owner or admin)',
  description: `The owner cannot be removed. What membership gave ends at once. ${roles}`,
  request: { params: s.MemberParams },
  responses: { 204: { description: 'Removed' }, ...errorsOf(404) },
});
