import type { Context, Hono } from 'hono';
import { createRouter } from '../../shared/platform/http/app';
import { type AppEnv, publicCtxOf } from '../../shared/platform/contract/context';
import { AppError } from '../../shared/platform/contract/errors';
import { defineFamily } from '../../shared/platform/http/family';
import { MCP_PATH, publicBase } from '../../shared/platform/http/app';
import { DAY, HOUR } from '../../shared/platform/contract/time';
import { sha256Hex } from '../../shared/platform/contract/crypto';
import * as q from './queries';
import { OAuthProblem, register, revokeToken, token } from './service';

export const AUTHORIZATION_SERVER_METADATA_PATH = '/.well-known/oauth-authorization-server';
/** The consent page, in the console (its session cookie is scoped to /console). */
export const CONSENT_PATH = '/console/oauth/authorize';
const REGISTRATIONS_PER_IP = 20;

/**
 * MCP sign-in (docs/mcp.md#connect-claude-chatgpt-vs-code-and-cursor-by-url): engram is its own
 * OAuth 2.1 authorization server for /mcp. Its endpoints are mounted outside the OpenAPI
 * document, as /mcp is: they speak OAuth's form-encoded requests and `{error, error_description}`
 * answers, which RFC clients parse, not the API's JSON bodies.
 */
export default defineFamily({
  name: 'oauth',
  router: createRouter(),
  maintenance: { unused_oauth_codes: ({ db, now }) => q.deleteUnusedCodes(db, new Date(now.getTime() - DAY)) },
});

/** The issuer and the resource: PUBLIC_URL or the listening address, never the request's Host. */
function baseOf(c: Context<AppEnv>): string {
  const base = publicBase(c);
  if (!base) throw new OAuthProblem('server_error', 'OAuth needs PUBLIC_URL: set it to the URL clients reach this server at', 500);
  return base;
}

export const resourceOf = (base: string) => `${base}${MCP_PATH}`;

/** RFC 8414: what a client needs to sign in, with PKCE S256 and public clients only. */
function serverMetadata(base: string) {
  return {
    issuer: base,
    authorization_endpoint: `${base}/oauth/authorize`,
    token_endpoint: `${base}/oauth/token`,
    registration_endpoint: `${base}/oauth/register`,
    revocation_endpoint: `${base}/oauth/revoke`,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    client_id_metadata_document_supported: true,
    authorization_response_iss_parameter_supported: true,
    service_documentation: `${base}/docs`,
  };
}

/** Token, register and revoke are called by clients, browser-based ones too (CORS, no credentials). */
const CORS = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Methods': 'GET, POST, OPTIONS',
  'Access-Control-Allow-Headers': 'content-type, authorization, mcp-protocol-version',
};

async function formParams(c: Context<AppEnv>): Promise<Record<string, string>> {
  const type = c.req.header('content-type') ?? '';
  if (!/^application\/x-www-form-urlencoded/i.test(type)) throw new OAuthProblem('invalid_request', 'Send the body as application/x-www-form-urlencoded');
  const body = await c.req.parseBody();
  return Object.fromEntries(Object.entries(body).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

/** An OAuth endpoint's answer: its JSON, or the RFC's error body; never cached (RFC 6749 §5.1). */
function oauthEndpoint(run: (c: Context<AppEnv>) => Promise<{ status: 200 | 201; body: unknown }>) {
  return async (c: Context<AppEnv>) => {
    const headers = { ...CORS, 'Cache-Control': 'no-store', Pragma: 'no-cache' };
    try {
      const { status, body } = await run(c);
      return c.json(body as object, status, headers);
    } catch (err) {
      if (err instanceof OAuthProblem) return c.json({ error: err.error, error_description: err.description }, err.status as 400, headers);
      if (err instanceof AppError && err.status === 429) {
        return c.json({ error: 'slow_down', error_description: err.message }, 429, { ...headers, 'Retry-After': String(err.extra.retry_after ?? 60) });
      }
      throw err;
    }
  };
}

/** Registrations per client address in an hourly window, as console sign-ins are counted. */
async function throttleRegistration(c: Context<AppEnv>) {
  const services = c.get('services');
  const subject = `oauth-register:${await sha256Hex(`oauth-register:${services.clientIp(c) ?? 'unknown'}`)}`;
  const now = services.clock.now();
  const rate = await services.rateLimiter.hit({ tenantId: null, keyId: subject, limit: REGISTRATIONS_PER_IP, windowMs: HOUR }, now);
  if (!rate.allowed) {
    throw new AppError('RATE_LIMITED', `At most ${REGISTRATIONS_PER_IP} client registrations per client IP address every hour`, {
      retry_after: Math.max(1, Math.ceil((rate.resetAt.getTime() - now.getTime()) / 1000)),
    });
  }
}

export function mountOAuth(app: Hono<AppEnv>) {
  const metadata = (c: Context<AppEnv>) => {
    const base = publicBase(c);
    if (!base) throw new AppError('NOT_FOUND', 'No authorization-server metadata: set PUBLIC_URL to the URL clients reach this server at');
    return c.json(serverMetadata(base), 200, CORS);
  };
  app.get(AUTHORIZATION_SERVER_METADATA_PATH, metadata);
  app.get(`${AUTHORIZATION_SERVER_METADATA_PATH}${MCP_PATH}`, metadata);
  // The consent page lives in the console, where the person's session is.
  app.get('/oauth/authorize', (c) => c.redirect(`${CONSENT_PATH}${new URL(c.req.url).search}`, 302));
  for (const path of ['/oauth/token', '/oauth/register', '/oauth/revoke', AUTHORIZATION_SERVER_METADATA_PATH]) {
    app.options(path, (c) => c.body(null, 204, CORS));
  }
  app.post(
    '/oauth/token',
    oauthEndpoint(async (c) => {
      const base = baseOf(c);
      return { status: 200, body: await token(publicCtxOf(c, 'oauth'), resourceOf(base), await formParams(c)) };
    }),
  );
  app.post(
    '/oauth/register',
    oauthEndpoint(async (c) => {
      await throttleRegistration(c);
      let body: unknown;
      try {
        body = await c.req.json();
      } catch {
        throw new OAuthProblem('invalid_client_metadata', 'The body must be JSON');
      }
      return { status: 201, body: await register(publicCtxOf(c, 'oauth'), body) };
    }),
  );
  app.post(
    '/oauth/revoke',
    oauthEndpoint(async (c) => {
      await revokeToken(publicCtxOf(c, 'oauth'), await formParams(c));
      return { status: 200, body: {} };
    }),
  );
}
