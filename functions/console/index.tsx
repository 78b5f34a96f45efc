/** @jsxImportSource hono/jsx */
import { Hono, type Handler, type MiddlewareHandler } from 'hono';
import { authenticate } from '../../shared/platform/http/auth';
import type { AppEnv } from '../../shared/platform/contract/context';
import { sha256Hex } from '../../shared/platform/contract/crypto';
import { AppError } from '../../shared/platform/contract/errors';
import { errorFields } from '../../shared/platform/contract/error-fields';
import { HOUR } from '../../shared/platform/contract/time';
import { ASSETS_PATH, assetByName } from './assets';
import {
  type ConsoleContext,
  type ConsoleEnv,
  formOf,
  fromHtmx,
  refuseCrossSiteSignIn,
  requireCsrf,
  requireSession,
  SIGN_IN_PATH,
  securityHeaders,
} from './http';
import { audit, auditExport, auditVerifyPage, decide, inbox, inboxStream } from './pages';
import { forgetMemory, memoriesPage, memoryPage } from './memory-pages';
import { overviewPage } from './overview-page';
import { rollbackPage, rollbackPreview, rollbackRun } from './rollback-pages';
import { endSession, sessionOf, startSession } from './session';
import { tracePage, tracesPage } from './trace-pages';
import { actionPage, actionsPage } from './action-pages';
import { policiesPage, policyDryRun } from './policy-pages';
import { replayPage } from './replay-pages';
import { webhookPage, webhookRedeliver, webhooksPage, webhookTest } from './webhook-pages';
import { Notice } from './views/layout';
import { connectedAppsPage, consentDecision, consentPage, revokeConnectedApp, signInFirst } from './oauth-pages';
import { ProblemPage, SignInPage } from './views/signin';

/** The console's place in the family list (its maintenance); its pages are mounted by mountConsole. */
export { default } from './family';

export const SIGN_INS_PER_IP = 20;
const SIGN_IN_WINDOW_MS = HOUR;

/** Sign-in attempts per client address in an hourly window of the rate limiter, as keys.verify counts its own. */
async function throttleSignIn(c: ConsoleContext) {
  const services = c.get('services');
  const subject = `console-sign-in:${await sha256Hex(`console-sign-in:${services.clientIp(c as never) ?? 'unknown'}`)}`;
  const now = services.clock.now();
  const rate = await services.rateLimiter.hit({ tenantId: null, keyId: subject, limit: SIGN_INS_PER_IP, windowMs: SIGN_IN_WINDOW_MS }, now);
  if (!rate.allowed) {
    throw new AppError('RATE_LIMITED', `At most ${SIGN_INS_PER_IP} sign-in attempts per client IP address every hour`, {
      retry_after: Math.max(1, Math.ceil((rate.resetAt.getTime() - now.getTime()) / 1000)),
    });
  }
}

const ENDED: Record<string, string> = {
  key: 'Your session ended: its API key was revoked or has expired.',
  out: 'You are signed out.',
};

/**
 * Where to go after sign-in: a console path the sign-in was asked to come back to (the consent
 * page), never another site (`//host`, `/\\host`) nor anything outside the console.
 */
function nextOf(next: string | undefined): string {
  return next?.startsWith('/console/') && !/[\\]|^\/\//.test(next) ? next : '/console/approvals';
}

const signInPage: Handler<ConsoleEnv> = async (c) => {
  const next = nextOf(c.req.query('next'));
  if (await sessionOf(c as never)) return c.redirect(next, 303);
  return c.html(<SignInPage ended={ENDED[c.req.query('ended') ?? '']} next={c.req.query('next') ? next : undefined} />);
};

const signIn: Handler<ConsoleEnv> = async (c) => {
  await throttleSignIn(c);
  const form = await formOf(c);
  const key = form.api_key?.trim() ?? '';
  const next = form.next ? nextOf(form.next) : undefined;
  let auth: Awaited<ReturnType<typeof authenticate>>;
  try {
    auth = await authenticate(c.get('services'), `Bearer ${key}`);
  } catch (err) {
    if (!(err instanceof AppError) || err.status !== 401) throw err;
    return c.html(<SignInPage problem={err.message} next={next} />, 401);
  }
  if (auth.restriction)
    return c.html(<SignInPage problem="A restricted key cannot sign in to the console; use an unrestricted key of the account." next={next} />, 403);
  await startSession(c as never, auth.tenantId, auth.keyId);
  return c.redirect(next ?? '/console/approvals', 303);
};

const signOut: Handler<ConsoleEnv> = async (c) => {
  await endSession(c as never, c.get('session').idHash);
  return c.redirect(`${SIGN_IN_PATH}?ended=out`, 303);
};

const asset: Handler<ConsoleEnv> = (c) => {
  const found = assetByName.get(c.req.param('name') ?? '');
  if (!found) return c.text('Not found', 404);
  return c.body(found.body, 200, { 'content-type': found.type, 'cache-control': 'public, max-age=31536000, immutable' });
};

export interface ConsoleRoute {
  method: 'GET' | 'POST';
  path: string;
  /** Whether it needs a signed-in session (without one: 303 to the sign-in page). */
  session: boolean;
  /** Path parameters naming a resource of the session's tenant (another tenant's id: 404). */
  idParams: readonly string[];
  handlers: (MiddlewareHandler<ConsoleEnv> | Handler<ConsoleEnv>)[];
}

const page = (method: ConsoleRoute['method'], path: string, handler: Handler<ConsoleEnv>, idParams: string[] = []): ConsoleRoute => ({
  method,
  path,
  session: true,
  idParams,
  handlers: method === 'POST' ? [requireSession, requireCsrf, handler] : [requireSession, handler],
});

/** Every console route: the app mounts these, and the security suite walks them (test/security/route-table.ts). */
export const consoleRoutes: readonly ConsoleRoute[] = [
  { method: 'GET', path: `${ASSETS_PATH}/:name`, session: false, idParams: [], handlers: [asset] },
  { method: 'GET', path: SIGN_IN_PATH, session: false, idParams: [], handlers: [signInPage] },
  { method: 'POST', path: SIGN_IN_PATH, session: false, idParams: [], handlers: [refuseCrossSiteSignIn, signIn] },
  page('POST', '/console/sign-out', signOut),
  page('GET', '/console', (c) => c.redirect('/console/approvals', 303)),
  page('GET', '/console/approvals', (c) => inbox(c)),
  page('GET', '/console/approvals/stream', inboxStream),
  page('POST', '/console/approvals/:approval_id/decision', decide, ['approval_id']),
  page('GET', '/console/audit', (c) => audit(c)),
  page('POST', '/console/audit/verify', auditVerifyPage),
  page('GET', '/console/audit/export', auditExport),
  page('GET', '/console/rollback', rollbackPage),
  page('GET', '/console/rollback/preview', rollbackPreview),
  page('POST', '/console/rollback', rollbackRun),
  page('GET', '/console/traces', tracesPage),
  page('GET', '/console/memories', memoriesPage),
  page('GET', '/console/memories/:id', memoryPage, ['id']),
  page('POST', '/console/memories/:id/forget', forgetMemory, ['id']),
  page('GET', '/console/overview', overviewPage),
  page('GET', '/console/traces/:trace_id', tracePage, ['trace_id']),
  page('GET', '/console/actions', actionsPage),
  page('GET', '/console/actions/:action_id', actionPage, ['action_id']),
  page('GET', '/console/policies', policiesPage),
  page('POST', '/console/policies/dry-run', policyDryRun),
  page('GET', '/console/replay', replayPage),
  page('GET', '/console/webhooks', webhooksPage),
  page('GET', '/console/webhooks/:webhook_id', (c) => webhookPage(c), ['webhook_id']),
  page('POST', '/console/webhooks/:webhook_id/test', webhookTest, ['webhook_id']),
  page('POST', '/console/webhooks/:webhook_id/deliveries/:delivery_id/redeliver', webhookRedeliver, ['webhook_id', 'delivery_id']),
  // The OAuth consent page (functions/oauth): without a session it is sign-in first, then back here.
  { method: 'GET', path: '/console/oauth/authorize', session: false, idParams: [], handlers: [signInFirst, requireSession, consentPage] },
  page('POST', '/console/oauth/authorize', consentDecision),
  page('GET', '/console/connected-apps', (c) => connectedAppsPage(c)),
  page('POST', '/console/connected-apps/revoke', revokeConnectedApp),
];

/** A refusal as a page (or, for htmx, a fragment it swaps in); a missing or ended session goes to sign-in. */
function problem(err: Error, c: ConsoleContext) {
  if (!(err instanceof AppError)) {
    c.get('services')?.log.error('console request failed', { request_id: c.get('requestId'), ...errorFields(err) });
    return c.html(<ProblemPage title="Something went wrong" message={`The server could not answer (request ${c.get('requestId')}).`} />, 500);
  }
  if (err.status === 401) return c.redirect(SIGN_IN_PATH, 303);
  const retry = err.extra.retry_after;
  if (typeof retry === 'number') c.header('Retry-After', String(retry));
  if (fromHtmx(c)) return c.html(<Notice kind="bad">{err.message}</Notice>);
  const title = err.status === 404 ? 'Not found' : err.status === 429 ? 'Slow down' : 'Refused';
  return c.html(<ProblemPage title={title} message={err.message} />, err.status as 400);
}

/**
 * `/console`: server-rendered pages for the people who decide and review (docs/console.md),
 * mounted outside OpenAPI as /mcp is. Each page is a view on the service verbs, called with the
 * session's tenant after the same key admission as the API.
 */
export function mountConsole(app: Hono<AppEnv>) {
  const router = new Hono<ConsoleEnv>();
  router.use('/console', securityHeaders);
  router.use('/console/*', securityHeaders);
  for (const route of consoleRoutes) router.on(route.method, route.path, ...(route.handlers as [Handler<ConsoleEnv>]));
  router.onError(problem);
  app.route('/', router as unknown as Hono<AppEnv>);
}
