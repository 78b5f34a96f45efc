import type { Context, MiddlewareHandler } from 'hono';
import { secureHeaders } from 'hono/secure-headers';
import { admitKeyHash } from '../../shared/platform/http/auth';
import type { AppEnv } from '../../shared/platform/contract/context';
import { timingSafeEqual } from '../../shared/platform/contract/crypto';
import { AppError } from '../../shared/platform/contract/errors';
import { endSession, type Session, sessionOf } from './session';
import { CSRF_FIELD } from './views/layout';

export type ConsoleEnv = {
  Variables: AppEnv['Variables'] & {
    session: Session;
    /** Where this page's form may send the browser besides the console (the consent page's client). */
    formTarget?: string;
  };
};
export type ConsoleContext = Context<ConsoleEnv>;

export const SIGN_IN_PATH = '/console/sign-in';

const consoleSecureHeaders = secureHeaders({
  contentSecurityPolicy: {
    defaultSrc: ["'self'"],
    frameAncestors: ["'none'"],
    baseUri: ["'none'"],
    formAction: ["'self'"],
    objectSrc: ["'none'"],
  },
  xFrameOptions: 'DENY',
  referrerPolicy: 'same-origin',
  // HSTS binds the whole host (and with includeSubDomains its subdomains): the operator's TLS
  // front decides that, not one path of the service.
  strictTransportSecurity: false,
});

/**
 * Every console answer: only our own scripts, styles and images (no inline ones), never framed,
 * no referrer beyond our origin (Hono's secure headers, with its other defaults); pages are not cached.
 */
export const securityHeaders: MiddlewareHandler<ConsoleEnv> = async (c, next) => {
  await consoleSecureHeaders(c, async () => {
    await next();
    if (!c.res.headers.has('cache-control')) c.header('Cache-Control', 'no-store');
  });
  // The consent page's form ends in a redirect to the client (its origin or app scheme), which
  // form-action must allow, or the browser stops at our own redirect.
  const target = c.get('formTarget');
  const csp = c.res.headers.get('content-security-policy');
  if (target && csp) c.res.headers.set('content-security-policy', csp.replace("form-action 'self'", `form-action 'self' ${target}`));
};

/**
 * A page of the signed-in console: the session's cookie names an unexpired session, and its key
 * passes what every keyed API request passes (the key check through the key cache, the rate
 * window, the api_calls quota). A key revoked or expired ends the session; no session is a
 * redirect to the sign-in page.
 */
export const requireSession: MiddlewareHandler<ConsoleEnv> = async (c, next) => {
  const session = await sessionOf(c as never);
  if (!session) return toSignIn(c, SIGN_IN_PATH);
  let admitted = false;
  try {
    await admitKeyHash(
      c as never,
      async () => {
        admitted = true;
        c.set('session', session);
        await next();
      },
      session.keyHash,
    );
  } catch (err) {
    if (admitted || !(err instanceof AppError) || err.status !== 401) throw err;
    await endSession(c as never, session.idHash);
    return toSignIn(c, `${SIGN_IN_PATH}?ended=key`);
  }
};

/** To the sign-in page: a redirect, or for htmx (which would swap the page into a card) its own redirect header. */
function toSignIn(c: ConsoleContext, location: string) {
  if (fromHtmx(c)) return c.body(null, 200, { 'HX-Redirect': location });
  return c.redirect(location, 303);
}

/**
 * Sign-in takes only a form of this console (login CSRF: a page elsewhere would sign the visitor's
 * browser in to the page owner's account, and what they then type is the owner's to read). A
 * browser says where a form came from: `Sec-Fetch-Site` must be `same-origin` (or `none`, the
 * visitor's own navigation), else `Origin` must be this server's (PUBLIC_URL's or the request's
 * own; a cross-site page cannot choose the Host a browser sends). A request with neither header is
 * not a browser's (curl, a script): it has no visitor to sign in against their will, and is taken.
 * Refused: 403 FORBIDDEN (docs/console.md#csrf-and-the-browsers-rules).
 */
export const refuseCrossSiteSignIn: MiddlewareHandler<ConsoleEnv> = async (c, next) => {
  const site = c.req.header('sec-fetch-site');
  const origin = c.req.header('origin');
  const sameOrigin = site !== undefined ? site === 'same-origin' || site === 'none' : origin === undefined || ownOrigins(c).includes(origin);
  if (!sameOrigin) throw new AppError('FORBIDDEN', 'Sign-in takes only the form of this console; open the console and sign in there');
  await next();
};

function ownOrigins(c: ConsoleContext): string[] {
  const publicUrl = c.get('services').config.PUBLIC_URL;
  return [new URL(c.req.url).origin, ...(publicUrl ? [new URL(publicUrl).origin] : [])];
}

/** A form post carries the session's CSRF token (compared in constant time), or is refused 403. */
export const requireCsrf: MiddlewareHandler<ConsoleEnv> = async (c, next) => {
  const form = await formOf(c);
  const sent = form[CSRF_FIELD] ?? '';
  if (!timingSafeEqual(sent, c.get('session').csrfToken))
    throw new AppError('FORBIDDEN', 'The form is out of date or did not come from this console; reload the page and try again');
  await next();
};

/** The posted form's text fields (hono caches the parse: the CSRF check and the handler share it). */
export async function formOf(c: Context): Promise<Record<string, string>> {
  const type = c.req.header('content-type') ?? '';
  if (!/^(application\/x-www-form-urlencoded|multipart\/form-data)/i.test(type)) return {};
  const body = await c.req.parseBody();
  return Object.fromEntries(Object.entries(body).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

/** A request made by htmx (it swaps a fragment), not a plain form post or link. */
export const fromHtmx = (c: Context) => c.req.header('hx-request') === 'true';
