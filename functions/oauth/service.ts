import type { Restriction } from '../../shared/platform/data/accounts';
import { forgetKeys } from '../../shared/platform/http/auth';
import type { Ctx, TenantCtx } from '../../shared/platform/contract/context';
import { randomBase62, sha256Hex } from '../../shared/platform/contract/crypto';
import { notFound } from '../../shared/platform/contract/errors';
import { newId, toUrn } from '../../shared/platform/contract/ids';
import { checkDestination } from '../../shared/platform/http/outbound';
import { checkedRestriction, issueRestrictedKey, restrictedKeyLimit } from '../../shared/platform/data/restricted-keys';
import { enforceLimit } from '../../shared/platform/http/verb';
import type { Services } from '../../shared/platform/contract/services';
import { DAY, HOUR, MINUTE } from '../../shared/platform/contract/time';
import { write } from '../../shared/platform/data/unit-of-work';
import * as q from './queries';

/** Lifetimes (docs/security.md#oauth-grants): a code a minute, an access token an hour, a refresh token 30 days. */
export const CODE_TTL_MS = MINUTE;
export const ACCESS_TTL_MS = HOUR;
export const REFRESH_TTL_MS = 30 * DAY;

/** Bounds of a registered client (RFC 7591), so registration cannot store unbounded data. */
export const MAX_REDIRECT_URIS = 10;
export const MAX_URI_LENGTH = 2000;
export const MAX_CLIENT_NAME = 200;
const MAX_METADATA_BYTES = 16 * 1024;

/**
 * A refusal in OAuth's own words (RFC 6749 §5.2, RFC 7591 §3.2.2, RFC 8707): the token, register
 * and revoke endpoints answer `{error, error_description}` as clients of those RFCs parse it, not
 * the API's error body; the authorization endpoint puts `error` on the redirect. Outside this
 * family nothing sees it.
 */
export class OAuthProblem extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly status = 400,
  ) {
    super(description);
  }
}

export interface OAuthClient {
  id: string;
  name: string;
  redirectUris: string[];
  /** `metadata_document`: the id is the HTTPS URL of its Client ID Metadata Document. */
  kind: 'registered' | 'metadata_document';
}

const FORBIDDEN_SCHEMES = new Set(['javascript:', 'data:', 'file:', 'vbscript:', 'about:', 'blob:', 'ftp:']);
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Why a redirect URI may not be registered, or null: an absolute URI without a fragment; https, or
 * http on loopback only (a native app's listener, RFC 8252 §7.3), or an app's own scheme (RFC 8252
 * §7.1, `cursor://`, `vscode://`); never a scheme a browser would run or read locally.
 */
export function redirectUriProblem(uri: unknown): string | null {
  if (typeof uri !== 'string' || !uri) return 'must be a non-empty string';
  if (uri.length > MAX_URI_LENGTH) return `must be at most ${MAX_URI_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return 'must be an absolute URI';
  }
  if (url.hash || uri.includes('#')) return 'must not have a fragment';
  if (FORBIDDEN_SCHEMES.has(url.protocol)) return `may not use ${url.protocol}`;
  if (url.protocol === 'http:' && !LOOPBACK.has(url.hostname)) return 'http is allowed only for loopback (localhost, 127.0.0.1, [::1]); use https';
  return null;
}

/** POST /oauth/register (RFC 7591): a public client (no secret) with exact redirect URIs. */
export async function register(ctx: Ctx, body: unknown) {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new OAuthProblem('invalid_client_metadata', 'The body must be a JSON object');
  const meta = body as Record<string, unknown>;
  const uris = meta.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0) throw new OAuthProblem('invalid_redirect_uri', 'redirect_uris must be a non-empty array');
  if (uris.length > MAX_REDIRECT_URIS) throw new OAuthProblem('invalid_redirect_uri', `At most ${MAX_REDIRECT_URIS} redirect_uris`);
  for (const uri of uris) {
    const problem = redirectUriProblem(uri);
    if (problem) throw new OAuthProblem('invalid_redirect_uri', `redirect_uris: ${String(uri).slice(0, 100)} ${problem}`);
  }
  const method = meta.token_endpoint_auth_method ?? 'none';
  if (method !== 'none')
    throw new OAuthProblem('invalid_client_metadata', 'token_endpoint_auth_method must be "none": clients are public and prove themselves with PKCE');
  for (const [field, allowed] of [
    ['grant_types', ['authorization_code', 'refresh_token']],
    ['response_types', ['code']],
  ] as const) {
    const given = meta[field];
    if (given === undefined) continue;
    if (!Array.isArray(given) || given.some((g) => !(allowed as readonly unknown[]).includes(g))) {
      throw new OAuthProblem('invalid_client_metadata', `${field} may only contain ${allowed.join(', ')}`);
    }
  }
  const rawName = meta.client_name ?? 'Unnamed client';
  if (typeof rawName !== 'string' || !rawName.trim() || rawName.length > MAX_CLIENT_NAME) {
    throw new OAuthProblem('invalid_client_metadata', `client_name must be a string of 1 to ${MAX_CLIENT_NAME} characters`);
  }
  const client = { id: newId('client'), clientName: rawName.trim(), redirectUris: [...new Set(uris as string[])], createdAt: ctx.now };
  await q.insertClient(ctx.db, client);
  return {
    client_id: client.id,
    client_id_issued_at: Math.floor(ctx.now.getTime() / 1000),
    client_name: client.clientName,
    redirect_uris: client.redirectUris,
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
  };
}

/**
 * The client a `client_id` names: a registered one, or a Client ID Metadata Document fetched from
 * the HTTPS URL that is the id, through the outbound rule webhooks use (no private, loopback or
 * metadata addresses; http and loopback only with WEBHOOKS_ALLOW_INSECURE). No redirect is followed.
 */
export async function resolveClient(services: Services, clientId: string): Promise<OAuthClient> {
  if (!clientId || clientId.length > MAX_URI_LENGTH) throw new OAuthProblem('invalid_client', 'client_id is missing or too long');
  if (!/^https?:\/\//i.test(clientId)) {
    const row = await q.findClient(services.db, clientId);
    if (!row)
      throw new OAuthProblem('invalid_client', 'Unknown client_id: register the client with POST /oauth/register, or use a Client ID Metadata Document URL');
    return { id: row.id, name: row.clientName, redirectUris: row.redirectUris, kind: 'registered' };
  }
  return fetchMetadataDocument(services, clientId);
}

async function fetchMetadataDocument(services: Services, url: string): Promise<OAuthClient> {
  const bad = (why: string) => new OAuthProblem('invalid_client', `The client's metadata document at ${url} ${why}`);
  if (!new URL(url).pathname.replace(/^\//, '')) throw bad('must have a path (a Client ID Metadata Document URL)');
  const checked = await checkDestination(url, { allowInsecure: services.config.WEBHOOKS_ALLOW_INSECURE, resolveHost: services.resolveHost });
  if (checked.problem !== null) throw bad(checked.problem);
  let doc: Record<string, unknown>;
  try {
    const init: RequestInit = { headers: { accept: 'application/json' }, redirect: 'manual', signal: AbortSignal.timeout(5_000) };
    const res = checked.addresses && services.fetchAt ? await services.fetchAt(url, init, checked.addresses) : await fetch(url, init);
    if (res.status !== 200) {
      await res.body?.cancel().catch(() => undefined);
      throw bad(`answered ${res.status}`);
    }
    const text = await res.text();
    if (text.length > MAX_METADATA_BYTES) throw bad(`is larger than ${MAX_METADATA_BYTES} bytes`);
    doc = JSON.parse(text) as Record<string, unknown>;
  } catch (err) {
    if (err instanceof OAuthProblem) throw err;
    throw bad(`could not be read (${err instanceof Error ? err.message : String(err)})`);
  }
  if (!doc || typeof doc !== 'object' || doc.client_id !== url) throw bad('must be a JSON object whose client_id is its own URL');
  const uris = doc.redirect_uris;
  if (!Array.isArray(uris) || !uris.length || uris.length > MAX_REDIRECT_URIS || uris.some((u) => redirectUriProblem(u))) {
    throw bad(`must list 1 to ${MAX_REDIRECT_URIS} valid redirect_uris`);
  }
  const name = typeof doc.client_name === 'string' && doc.client_name.trim() ? doc.client_name.trim().slice(0, MAX_CLIENT_NAME) : new URL(url).host;
  return { id: url, name, redirectUris: uris as string[], kind: 'metadata_document' };
}

/** An authorization request's parameters (RFC 6749 §4.1.1, RFC 7636, RFC 8707), as the query or the consent form carries them. */
export interface AuthorizeParams {
  client_id?: string;
  redirect_uri?: string;
  response_type?: string;
  code_challenge?: string;
  code_challenge_method?: string;
  state?: string;
  resource?: string;
  scope?: string;
}

export const AUTHORIZE_FIELDS = [
  'client_id',
  'redirect_uri',
  'response_type',
  'code_challenge',
  'code_challenge_method',
  'state',
  'resource',
  'scope',
] as const;

/** What becomes of an authorization request: a page (nothing about the redirect is trusted yet), an error redirect, or consent. */
export type AuthorizeOutcome =
  | { kind: 'page'; message: string }
  | { kind: 'redirect'; error: string; description: string; redirectUri: string; state?: string }
  | {
      kind: 'consent';
      client: OAuthClient;
      params: Required<Pick<AuthorizeParams, 'client_id' | 'redirect_uri' | 'code_challenge' | 'resource'>> & AuthorizeParams;
    };

/**
 * Checks an authorization request. Until the client and its exact redirect URI are known, a
 * problem is shown on the page and never redirected (no open redirect); after that, problems go
 * back to the client on its redirect URI as RFC 6749 §4.1.2.1 says.
 */
export async function checkAuthorize(services: Services, resource: string, params: AuthorizeParams): Promise<AuthorizeOutcome> {
  let client: OAuthClient;
  try {
    client = await resolveClient(services, params.client_id ?? '');
  } catch (err) {
    if (err instanceof OAuthProblem) return { kind: 'page', message: err.description };
    throw err;
  }
  const redirectUri = params.redirect_uri ?? (client.redirectUris.length === 1 ? client.redirectUris[0] : undefined);
  if (!redirectUri) return { kind: 'page', message: 'redirect_uri is missing, and the client registered more than one' };
  if (!client.redirectUris.includes(redirectUri))
    return { kind: 'page', message: `redirect_uri is not one the client ${client.name} registered (it must match exactly)` };
  const state = params.state;
  const back = (error: string, description: string): AuthorizeOutcome => ({
    kind: 'redirect',
    error,
    description,
    redirectUri,
    ...(state !== undefined ? { state } : {}),
  });
  if (state !== undefined && state.length > 1000) return back('invalid_request', 'state must be at most 1000 characters');
  if (params.response_type !== 'code') return back('unsupported_response_type', 'Only response_type=code is supported');
  if (!params.code_challenge || params.code_challenge_method !== 'S256')
    return back('invalid_request', 'PKCE is required: code_challenge with code_challenge_method=S256');
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(params.code_challenge)) return back('invalid_request', 'code_challenge must be 43 to 128 characters of base64url');
  if (params.resource !== resource) return back('invalid_target', `resource must be this server's MCP endpoint, ${resource}`);
  return { kind: 'consent', client, params: { ...params, client_id: client.id, redirect_uri: redirectUri, code_challenge: params.code_challenge, resource } };
}

/** Where the browser goes back to the client: the redirect URI with the answer's parameters (RFC 9207 `iss` included). */
export function redirectBack(redirectUri: string, answer: Record<string, string | undefined>): string {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(answer)) if (value !== undefined) url.searchParams.set(name, value);
  return url.toString();
}

export interface Consent {
  scopes: string[];
  agentId: string | null;
  spaceIds: string[] | undefined;
  expiresAt: Date | null;
}

/**
 * The person approved: the grant is a restricted key of their account (the restricted-key
 * machinery, so every scope and confinement rule applies), minted with the code, which alone can
 * bring it to life within a minute. One unit of work, audited `oauth.grant_created`.
 */
export async function approve(ctx: TenantCtx, consent: Extract<AuthorizeOutcome, { kind: 'consent' }>, choice: Consent): Promise<string> {
  const { client, params } = consent;
  const restriction: Restriction = await checkedRestriction(
    ctx,
    { name: `OAuth: ${client.name}`.slice(0, 100), scopes: choice.scopes, agent_id: choice.agentId, space_ids: choice.spaceIds, expires_at: choice.expiresAt },
    'approve connected apps',
  );
  const code = `eac_${randomBase62(43)}`;
  const codeExpiresAt = new Date(ctx.now.getTime() + CODE_TTL_MS);
  await write(ctx, async (work) => {
    // The key's secret is thrown away: it works only once the code is exchanged and its hash replaced.
    await enforceLimit(restrictedKeyLimit, work, undefined);
    const key = await issueRestrictedKey(work, restriction, { expiresAt: codeExpiresAt, reason: 'oauth' });
    const grantId = newId('grant');
    await q.insertGrant(work.tx, {
      id: grantId,
      tenantId: ctx.tenantId,
      keyId: key.keyId,
      clientId: client.id,
      clientName: client.name,
      redirectUri: params.redirect_uri,
      resource: params.resource,
      codeHash: await sha256Hex(code),
      codeChallenge: params.code_challenge,
      codeExpiresAt,
      expiresAt: choice.expiresAt,
      createdAt: ctx.now,
    });
    await work.audit({
      operation: 'oauth.grant_created',
      resourceType: 'oauth_grant',
      resourceId: grantId,
      metadata: {
        client_id: client.id,
        client_name: client.name,
        redirect_uri: params.redirect_uri,
        key_id: key.keyId,
        scopes: restriction.scopes,
        agent_id: restriction.agentId,
        space_ids: restriction.spaceIds?.map(toUrn) ?? null,
        expires_at: choice.expiresAt?.toISOString() ?? null,
      },
    });
  });
  return code;
}

/** base64url(SHA-256(verifier)), RFC 7636 §4.6. */
async function s256(verifier: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
  let binary = '';
  for (const b of digest) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

const earliest = (a: Date, b: Date | null) => (b && b < a ? b : a);
const invalidGrant = (why: string) => new OAuthProblem('invalid_grant', why);

type TokenParams = Record<string, string | undefined>;

/** New access and refresh tokens for the grant; the old ones stop working with this transaction. */
async function issueTokens(tx: Parameters<Parameters<typeof write>[1]>[0]['tx'], grant: q.GrantRow, now: Date) {
  const access = `eat_${randomBase62(43)}`;
  const refresh = `ert_${randomBase62(43)}`;
  const accessExpiresAt = earliest(new Date(now.getTime() + ACCESS_TTL_MS), grant.expiresAt);
  const refreshExpiresAt = earliest(new Date(now.getTime() + REFRESH_TTL_MS), grant.expiresAt);
  await q.setAccessToken(tx, grant.tenantId, grant.keyId, await sha256Hex(access), access.slice(0, 12), accessExpiresAt);
  const refreshHash = await sha256Hex(refresh);
  return { access, refresh, refreshHash, accessExpiresAt, refreshExpiresAt };
}

type Outcome = { tokens: Record<string, unknown>; tenantId: string } | { problem: OAuthProblem; tenantId: string | null };

/**
 * POST /oauth/token: an authorization code (PKCE S256, the same client, redirect URI and resource,
 * within its minute, once) or a refresh token (rotated: the one presented stops working; a
 * presented one that already rotated revokes the grant, RFC 9700 §4.14.2). A replayed code
 * revokes the grant it made (RFC 6749 §4.1.2). Each is one unit of work, audited.
 */
export async function token(ctx: Ctx, resource: string, params: TokenParams) {
  const grantType = params.grant_type;
  let outcome: Outcome;
  if (grantType === 'authorization_code') outcome = await exchangeCode(ctx, resource, params);
  else if (grantType === 'refresh_token') outcome = await refresh(ctx, resource, params);
  else throw new OAuthProblem('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token');
  if (outcome.tenantId) await forgetKeys(ctx.services, outcome.tenantId);
  if ('problem' in outcome) throw outcome.problem;
  return outcome.tokens;
}

function required(params: TokenParams, ...names: string[]) {
  for (const name of names) if (!params[name]) throw new OAuthProblem('invalid_request', `${name} is required`);
}

async function exchangeCode(ctx: Ctx, resource: string, params: TokenParams): Promise<Outcome> {
  required(params, 'code', 'code_verifier', 'redirect_uri', 'client_id');
  if (params.resource !== undefined && params.resource !== resource) throw new OAuthProblem('invalid_target', `resource must be ${resource}`);
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(params.code_verifier!)) throw new OAuthProblem('invalid_request', 'code_verifier must be 43 to 128 characters');
  const codeHash = await sha256Hex(params.code!);
  return write(ctx, async (work): Promise<Outcome> => {
    const grant = await q.lockGrantByCode(work.tx, codeHash);
    if (!grant) return { problem: invalidGrant('The authorization code is unknown'), tenantId: null };
    if (grant.codeUsedAt) {
      await revokeInWork(work, grant, 'code_replayed');
      return { problem: invalidGrant('The authorization code was already used; the grant it made is revoked'), tenantId: grant.tenantId };
    }
    const now = work.ctx.now;
    if (grant.revokedAt) return { problem: invalidGrant('The grant was revoked'), tenantId: null };
    if (grant.codeExpiresAt <= now) return { problem: invalidGrant('The authorization code has expired'), tenantId: null };
    if (grant.clientId !== params.client_id) return { problem: invalidGrant('The authorization code was issued to another client'), tenantId: null };
    if (grant.redirectUri !== params.redirect_uri) return { problem: invalidGrant('redirect_uri does not match the authorization request'), tenantId: null };
    if (grant.resource !== resource) return { problem: new OAuthProblem('invalid_target', `resource must be ${resource}`), tenantId: null };
    if ((await s256(params.code_verifier!)) !== grant.codeChallenge)
      return { problem: invalidGrant('code_verifier does not match the code_challenge'), tenantId: null };
    const issued = await issueTokens(work.tx, grant, now);
    await q.updateGrant(work.tx, grant.tenantId, grant.id, {
      codeUsedAt: now,
      refreshHash: issued.refreshHash,
      refreshExpiresAt: issued.refreshExpiresAt,
      lastUsedAt: now,
    });
    await work.audit({
      tenantId: grant.tenantId,
      operation: 'oauth.code_exchanged',
      resourceType: 'oauth_grant',
      resourceId: grant.id,
      metadata: { client_id: grant.clientId, key_id: grant.keyId, access_expires_at: issued.accessExpiresAt.toISOString() },
    });
    return { tokens: await tokensOf(work.tx, grant, issued, now), tenantId: grant.tenantId };
  });
}

async function refresh(ctx: Ctx, resource: string, params: TokenParams): Promise<Outcome> {
  required(params, 'refresh_token', 'client_id');
  if (params.resource !== undefined && params.resource !== resource) throw new OAuthProblem('invalid_target', `resource must be ${resource}`);
  const refreshHash = await sha256Hex(params.refresh_token!);
  return write(ctx, async (work): Promise<Outcome> => {
    const now = work.ctx.now;
    const grant = await q.lockGrantByRefresh(work.tx, refreshHash);
    if (!grant) {
      const rotated = await q.lockGrantByPreviousRefresh(work.tx, refreshHash);
      if (rotated && !rotated.revokedAt) {
        await revokeInWork(work, rotated, 'refresh_token_replayed');
        return { problem: invalidGrant('The refresh token was already used; the grant is revoked'), tenantId: rotated.tenantId };
      }
      return { problem: invalidGrant('The refresh token is unknown or was already used'), tenantId: null };
    }
    if (grant.revokedAt) return { problem: invalidGrant('The grant was revoked'), tenantId: null };
    if (grant.clientId !== params.client_id) return { problem: invalidGrant('The refresh token was issued to another client'), tenantId: null };
    if (!grant.refreshExpiresAt || grant.refreshExpiresAt <= now) return { problem: invalidGrant('The refresh token has expired'), tenantId: null };
    const key = await q.keyStatus(work.tx, grant.tenantId, grant.keyId);
    if (!key || key.status === 'revoked') return { problem: invalidGrant("The grant's key was revoked"), tenantId: null };
    const issued = await issueTokens(work.tx, grant, now);
    await q.updateGrant(work.tx, grant.tenantId, grant.id, {
      refreshHash: issued.refreshHash,
      previousRefreshHash: refreshHash,
      refreshExpiresAt: issued.refreshExpiresAt,
      lastUsedAt: now,
    });
    await work.audit({
      tenantId: grant.tenantId,
      operation: 'oauth.token_refreshed',
      resourceType: 'oauth_grant',
      resourceId: grant.id,
      metadata: { client_id: grant.clientId, key_id: grant.keyId, access_expires_at: issued.accessExpiresAt.toISOString() },
    });
    return { tokens: await tokensOf(work.tx, grant, issued, now), tenantId: grant.tenantId };
  });
}

async function tokensOf(tx: Parameters<typeof q.keyStatus>[0], grant: q.GrantRow, issued: Awaited<ReturnType<typeof issueTokens>>, now: Date) {
  const key = await q.keyStatus(tx, grant.tenantId, grant.keyId);
  return {
    access_token: issued.access,
    token_type: 'Bearer',
    expires_in: Math.max(1, Math.round((issued.accessExpiresAt.getTime() - now.getTime()) / 1000)),
    refresh_token: issued.refresh,
    scope: (key?.scopes ?? []).join(' '),
  };
}

type AnyWork = Parameters<Parameters<typeof write>[1]>[0];

/** Revokes the grant and its key in the caller's unit of work, audited `oauth.grant_revoked`. */
async function revokeInWork(work: AnyWork, grant: q.GrantRow, reason: string) {
  const now = work.ctx.now;
  await q.updateGrant(work.tx, grant.tenantId, grant.id, { revokedAt: now, refreshHash: null });
  await q.revokeKey(work.tx, grant.tenantId, grant.keyId, now);
  await work.audit({
    tenantId: grant.tenantId,
    operation: 'oauth.grant_revoked',
    resourceType: 'oauth_grant',
    resourceId: grant.id,
    metadata: { client_id: grant.clientId, key_id: grant.keyId, reason },
  });
}

/**
 * POST /oauth/revoke (RFC 7009): an access or refresh token of a grant revokes the whole grant
 * (its key too). An unknown token, or one of another client, answers the same 200 and changes nothing.
 */
export async function revokeToken(ctx: Ctx, params: TokenParams) {
  required(params, 'token');
  const hash = await sha256Hex(params.token!);
  const tenantId = await write(ctx, async (work) => {
    const grant = (await q.lockGrantByRefresh(work.tx, hash)) ?? (await q.lockGrantByAccess(work.tx, hash));
    if (!grant || grant.revokedAt || (params.client_id && params.client_id !== grant.clientId)) return null;
    await revokeInWork(work, grant, 'client_revoked');
    return grant.tenantId;
  });
  if (tenantId) await forgetKeys(ctx.services, tenantId);
}

/** The console's "Connected apps": the account's exchanged grants, with what each may do. */
export async function listGrants(ctx: TenantCtx) {
  const found = await q.listGrants(ctx.db, ctx.tenantId);
  return found.map(({ grant, key }) => ({
    id: grant.id,
    clientId: grant.clientId,
    clientName: grant.clientName,
    redirectHost: hostOf(grant.redirectUri),
    scopes: key.scopes ?? [],
    agentId: key.agentId,
    spaceIds: key.spaceIds?.map(toUrn) ?? null,
    createdAt: grant.createdAt,
    lastUsedAt: grant.lastUsedAt,
    expiresAt: grant.expiresAt,
    active: !grant.revokedAt && key.status !== 'revoked' && !(grant.expiresAt && grant.expiresAt <= ctx.now),
  }));
}

export const hostOf = (uri: string) => {
  try {
    const url = new URL(uri);
    return url.host || `${url.protocol}//`;
  } catch {
    return uri;
  }
};

/** The console revokes a grant of the session's account: 404 for any other id. */
export async function revokeGrant(ctx: TenantCtx, grantId: string) {
  const done = await write(ctx, async (work) => {
    const grant = await q.lockGrantOfTenant(work.tx, ctx.tenantId, grantId);
    if (!grant) throw notFound('Connected app');
    if (grant.revokedAt) return false;
    await revokeInWork(work, grant, 'owner_revoked');
    return true;
  });
  await forgetKeys(ctx.services, ctx.tenantId);
  return done;
}
