import { errors, json, jsonBody, keyRoute, publicRoute } from '../../shared/platform/http/openapi';
import * as s from './schemas';

const tags = ['Sharing'];

export const shareRoute = keyRoute({
  operationId: 'shares.create',
  feature: 'sharing',
  method: 'post',
  path: '/v1/spaces/share',
  tags,
  summary: 'Share a tag or a context space with another tenant (Starter+)',
  description:
    'Mails an invitation token to `email`; only the tenant registered with that address can join. If `tag` is the id of a live context space you own, the space is shared (Pro+); otherwise your memories carrying the tag. The token is shown here once and only its SHA-256 is stored. Invitations and the access they grant expire after 30 days; rotating renews them.',
  request: { body: jsonBody(s.ShareBody) },
  responses: { 201: json(s.ShareCreated, 'Invitation created and mailed'), ...errors(400, 403) },
});

export const listRoute = keyRoute({
  operationId: 'shares.list',
  method: 'get',
  path: '/v1/spaces/shared',
  tags,
  summary: 'Shares you created and shares you received',
  description:
    'Entries follow the share invitation resource, except that `token` and `share_url` are always null: the service keeps only a hash of each token. `share_id` and `token_prefix` identify a share instead; rotate and revoke accept the share id in place of the token.',
  responses: { 200: json(s.SharedList, 'Shares') },
});

export const checkTokenRoute = publicRoute({
  operationId: 'shares.checkToken',
  method: 'get',
  path: '/v1/spaces/token/{token}',
  tags,
  summary: 'Check a share token (public)',
  description: '`owner_tenant_id`, `tag` and `permission` are present only when the token is valid. `error` is `not_found`, `expired`, `revoked` or null.',
  request: { params: s.TokenParams },
  responses: { 200: json(s.TokenCheck, 'Token status'), ...errors(400) },
});

export const joinRoute = keyRoute({
  operationId: 'shares.join',
  feature: 'sharing',
  method: 'post',
  path: '/v1/spaces/join',
  tags,
  summary: 'Accept a share invitation (Starter+)',
  description:
    'Binds the share to your tenant. Only the tenant whose e-mail the invitation was sent to may join; joining again is a no-op success. Unknown, expired, revoked, mis-addressed or already used tokens are 400 INVALID_TOKEN.',
  request: { body: jsonBody(s.JoinBody) },
  responses: { 200: json(s.JoinResponse, 'Joined'), ...errors(400, 403) },
});

export const rotateRoute = keyRoute({
  operationId: 'shares.rotate',
  feature: 'sharing',
  method: 'post',
  path: '/v1/spaces/share/{token}/rotate',
  tags,
  summary: 'Rotate a share token (owner only)',
  description:
    'Path: the current token or the share id. Issues a new token with a fresh 30-day lifetime; the old token stops working at once. A recipient who already joined keeps access; an unaccepted invitation is mailed again.',
  request: { params: s.ShareRefParams },
  responses: { 200: json(s.ShareCreated, 'New token; shown once'), ...errors(400, 403, 404) },
});

export const revokeRoute = keyRoute({
  operationId: 'shares.revoke',
  method: 'delete',
  path: '/v1/spaces/share/{token}',
  tags,
  summary: 'Revoke a share (owner only)',
  description: 'Path: the token or the share id. The recipient loses access immediately. Revoking a revoked share is a no-op.',
  request: { params: s.ShareRefParams },
  responses: { 204: { description: 'Revoked' }, ...errors(400, 403, 404) },
});
