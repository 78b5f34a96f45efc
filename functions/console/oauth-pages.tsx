/** @jsxImportSource hono/jsx */
import type { Context, MiddlewareHandler } from 'hono';
import { resourceOf } from '../oauth';
import {
  approve,
  AUTHORIZE_FIELDS,
  type AuthorizeOutcome,
  type AuthorizeParams,
  checkAuthorize,
  hostOf,
  listGrants,
  redirectBack,
  revokeGrant,
} from '../oauth/service';
import type { AppEnv } from '../../shared/platform/contract/context';
import { publicBase } from '../../shared/platform/http/app';
import { DAY } from '../../shared/platform/contract/time';
import { type ConsoleContext, type ConsoleEnv, formOf, SIGN_IN_PATH } from './http';
import { sessionOf } from './session';
import { messageOf, tenantOf, viewerOf } from './viewer';
import { ConnectedAppsPage, ConsentPage } from './views/oauth';
import { ProblemPage } from './views/signin';

/** Not signed in: the console's own sign-in first, then back to this very request. */
export const signInFirst: MiddlewareHandler<ConsoleEnv> = async (c, next) => {
  if (await sessionOf(c as never)) return next();
  const url = new URL(c.req.url);
  return c.redirect(`${SIGN_IN_PATH}?next=${encodeURIComponent(`${url.pathname}${url.search}`)}`, 303);
};

function paramsOf(source: Record<string, string | undefined>): AuthorizeParams {
  const params: AuthorizeParams = {};
  for (const field of AUTHORIZE_FIELDS) if (typeof source[field] === 'string') params[field] = source[field];
  return params;
}

/** The request checked against the client and this server's MCP resource; the issuer for RFC 9207's `iss`. */
async function checked(c: ConsoleContext, source: Record<string, string | undefined>) {
  const base = publicBase(c as unknown as Context<AppEnv>);
  if (!base)
    return {
      base: '',
      outcome: { kind: 'page', message: 'Sign-in needs PUBLIC_URL: the operator sets it to the URL clients reach this server at' } as AuthorizeOutcome,
    };
  return { base, outcome: await checkAuthorize(c.get('services'), resourceOf(base), paramsOf(source)) };
}

/** A problem before the redirect URI is trusted is shown here; after, it goes back to the client. */
function settle(c: ConsoleContext, base: string, outcome: Exclude<AuthorizeOutcome, { kind: 'consent' }>) {
  if (outcome.kind === 'page') return c.html(<ProblemPage title="This sign-in request is not valid" message={outcome.message} viewer={viewerOf(c)} />, 400);
  return c.redirect(redirectBack(outcome.redirectUri, { error: outcome.error, error_description: outcome.description, state: outcome.state, iss: base }), 303);
}

/** Where the consent form may send the browser on: the client's redirect origin, or its app's scheme. */
function formTargetOf(redirectUri: string): string {
  const url = new URL(redirectUri);
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol;
}

function consentView(c: ConsoleContext, outcome: Extract<AuthorizeOutcome, { kind: 'consent' }>, problem?: string, status = 200) {
  const hidden: Record<string, string> = {};
  for (const field of AUTHORIZE_FIELDS) {
    const value = outcome.params[field];
    if (value !== undefined) hidden[field] = value;
  }
  c.set('formTarget', formTargetOf(outcome.params.redirect_uri));
  return c.html(
    <ConsentPage
      viewer={viewerOf(c)}
      clientName={outcome.client.name}
      clientId={outcome.client.id}
      redirectHost={hostOf(outcome.params.redirect_uri)}
      hidden={hidden}
      families={scopeFamiliesOf(c)}
      problem={problem}
    />,
    status as 200,
  );
}

/** GET: the authorization request (RFC 6749 §4.1.1) as a consent page. */
export async function consentPage(c: ConsoleContext) {
  const { base, outcome } = await checked(c, c.req.query());
  if (outcome.kind !== 'consent') return settle(c, base, outcome);
  return consentView(c, outcome);
}

/** The scope families of the app that took the request (docs/architecture.md#registries-belong-to-the-app). */
const scopeFamiliesOf = (c: ConsoleContext): string[] => [...(c.get('registry')?.scopeFamilies ?? [])].sort();

/** The scopes the form picked: `*`, or `<family>:read|write` per family. */
function scopesOf(c: ConsoleContext, form: Record<string, string>): string[] {
  if (form.all_scopes) return ['*'];
  return scopeFamiliesOf(c).flatMap((family) => {
    const access = form[`scope_${family}`];
    return access === 'read' || access === 'write' ? [`${family}:${access}`] : [];
  });
}

/** POST: approve (a grant, then the code back to the client) or deny (access_denied back to it). */
export async function consentDecision(c: ConsoleContext) {
  const form = await formOf(c);
  const { base, outcome } = await checked(c, form);
  if (outcome.kind !== 'consent') return settle(c, base, outcome);
  const { redirect_uri, state } = outcome.params;
  if (form.decision !== 'approve')
    return c.redirect(redirectBack(redirect_uri, { error: 'access_denied', error_description: 'The person denied access', state, iss: base }), 303);
  const scopes = scopesOf(c, form);
  if (!scopes.length) return consentView(c, outcome, 'Pick at least one thing the app may do, or deny.', 400);
  const days = form.expires === 'never' ? null : Number(form.expires ?? '30');
  if (days !== null && !(Number.isInteger(days) && days >= 1 && days <= 365)) return consentView(c, outcome, 'Pick when access ends.', 400);
  const ctx = tenantOf(c);
  const spaces = (form.space_ids ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  let code: string;
  try {
    code = await approve(ctx, outcome, {
      scopes,
      agentId: form.agent_id?.trim() || null,
      spaceIds: spaces.length ? spaces : undefined,
      expiresAt: days === null ? null : new Date(ctx.now.getTime() + days * DAY),
    });
  } catch (err) {
    return consentView(c, outcome, messageOf(err), (err as { status: number }).status);
  }
  return c.redirect(redirectBack(redirect_uri, { code, state, iss: base }), 303);
}

const REVOKED: Record<string, string> = { '1': 'Access revoked: its tokens stopped working.' };

/** The account's connected apps. */
export async function connectedAppsPage(c: ConsoleContext, problem?: string, status = 200) {
  const grants = await listGrants(tenantOf(c));
  return c.html(<ConnectedAppsPage viewer={viewerOf(c)} grants={grants} notice={REVOKED[c.req.query('revoked') ?? '']} problem={problem} />, status as 200);
}

/** Revokes one connected app of the session's account (another account's grant id: 404). */
export async function revokeConnectedApp(c: ConsoleContext) {
  try {
    await revokeGrant(tenantOf(c), (await formOf(c)).grant_id ?? '');
  } catch (err) {
    return connectedAppsPage(c, messageOf(err), (err as { status: number }).status);
  }
  return c.redirect('/console/connected-apps?revoked=1', 303);
}
