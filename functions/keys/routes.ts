import { routeOf } from '../../shared/platform/http/verb';
import { createRestrictedVerb } from './verbs';
import { errors, json, jsonBody, keyRoute, publicRoute } from '../../shared/platform/http/openapi';
import { DAY, HOUR } from '../../shared/platform/contract/time';
import * as s from './schemas';
import { LOCAL_SIGNUP_WINDOW_MS, SIGNUP_WINDOW_MS, SIGNUPS_PER_IP } from './service';

const tags = ['Keys'];

export const signupRoute = publicRoute({
  operationId: 'keys.signup',
  method: 'post',
  path: '/v1/keys',
  tags,
  summary: 'Sign up',
  description: `Creates an unverified free-tier account and e-mails a verification token (valid 24 h, single use); POST /v1/verify exchanges it for the API key. Disposable e-mail domains are refused. The answer is the same whether or not the address already has an account.

**Limit:** at most ${SIGNUPS_PER_IP} signups per client IP address in any ${SIGNUP_WINDOW_MS / DAY} days, counted from each signup: a third is answered 429 RATE_LIMITED, whose message says when the address may sign up again (Retry-After in seconds). On a server using embedded storage (no DATABASE_URL), a loopback client (127.0.0.1, ::1) gets a ${LOCAL_SIGNUP_WINDOW_MS / HOUR}-hour window instead. On a server of your own, the operator API (POST /admin/v1/tenants with ADMIN_TOKEN) creates tenants of any tier, with their key, without this limit.`,
  request: { body: jsonBody(s.SignupBody) },
  responses: { 201: json(s.SignupResponse, 'Verification mail sent'), ...errors(400, 409, 429) },
});

export const verifyRoute = publicRoute({
  operationId: 'keys.verify',
  method: 'post',
  path: '/v1/verify',
  tags,
  summary: 'Verify e-mail and receive the first key',
  description:
    "Exchanges the token from the verification mail (valid 24 hours, single use) for the account's first API key, which is shown only in this response. At most 20 attempts per client IP and 10 per e-mail address every hour (429 RATE_LIMITED with Retry-After).",
  request: { body: jsonBody(s.VerifyBody) },
  responses: { 200: json(s.VerifyResponse, 'Account verified; the key is shown once'), ...errors(400, 404, 429) },
});

export const rotateRoute = keyRoute({
  operationId: 'keys.rotate',
  method: 'post',
  path: '/v1/keys/rotate',
  tags,
  summary: 'Rotate the calling key',
  description:
    'Issues a new key. The calling key moves to `grace` and keeps working for data for 24 hours, but can no longer rotate or revoke keys (403 FORBIDDEN); only an active key manages keys. A restricted key cannot rotate (403 FORBIDDEN, `required_scope: "unrestricted"`).',
  request: { body: { required: false, content: { 'application/json': { schema: s.RotateBody } } } },
  responses: { 200: json(s.RotateResponse, 'New key issued; shown once'), ...errors(400, 403) },
});

export const restrictedRoute = keyRoute({
  ...routeOf(createRestrictedVerb),
  path: '/v1/keys/restricted',
  tags,
  summary: 'Create a restricted key',
  description:
    "Mints a key of the caller's account that may call only what its `scopes` name (`<family>:read`, `<family>:write`, `*`; a GET needs read, any other method write; the family is the operationId's prefix unless the operation names another, and every operation states its scope as `x-required-scope`: deciding approvals needs `approvals:write` and changing control settings `settings:write`, which `actions:write` does not grant). With `agent_id` it reads only that agent's memories and stores only as that agent; with `space_ids` it reads and stores memories only in those spaces. Any other call is 403 FORBIDDEN with `required_scope`. Only an unrestricted key may mint one (a restricted key is 403 FORBIDDEN, `required_scope: \"unrestricted\"`); at most 50 live restricted keys per account (403 svc_ram.v1.tier.limit_exceeded). The secret is shown only in this answer; revoke it with POST /v1/keys/revoke.",
  responses: { 201: json(s.RestrictedKeyResponse, 'Restricted key created; the secret is shown once'), ...errors(400, 403) },
});

export const listRoute = keyRoute({
  operationId: 'keys.list',
  confinable: true,
  method: 'get',
  path: '/v1/keys',
  tags,
  summary: 'List keys',
  description:
    'Every key of the account with its prefix and status (`active`, `grace`, `revoked`, `expired`), and what it may do: `scopes` (`["*"]` for an unrestricted key), `agent_id`, `space_ids`; never the secret.',
  responses: { 200: json(s.KeyListResponse, 'Every key of the account, oldest first') },
});

export const revokeRoute = keyRoute({
  operationId: 'keys.revoke',
  method: 'post',
  path: '/v1/keys/revoke',
  tags,
  summary: 'Revoke a key by id or prefix',
  description:
    'Takes effect immediately. A key may revoke itself. A restricted key (with `keys:write`) may revoke only restricted keys; an unrestricted one is 403 FORBIDDEN.',
  request: { body: jsonBody(s.RevokeBody) },
  responses: { 200: json(s.RevokeResponse, 'Key revoked'), ...errors(400, 403, 404) },
});
