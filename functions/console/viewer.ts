import { ctxOf } from '../../shared/platform/context';
import { AppError } from '../../shared/platform/errors';
import type { ConsoleContext } from './http';
import type { Viewer } from './views/layout';

/** Who is signed in, as the layout shows them, with the session's CSRF token for its forms. */
export const viewerOf = (c: ConsoleContext): Viewer => {
  const { auth } = ctxOf(c as never);
  return { email: auth.email, tier: auth.tier, csrfToken: c.get('session').csrfToken };
};

/** The session's tenant context, as the API's handlers get it. */
export const tenantOf = (c: ConsoleContext) => ctxOf(c as never);

/** A refusal (4xx) as the text the API answers, for the page to show; anything else is thrown on. */
export const messageOf = (err: unknown): string => {
  if (err instanceof AppError && err.status < 500) return err.message;
  throw err;
};

/** zod issues as one line, `field: message; …`. */
export const issuesOf = (error: { issues: { path: PropertyKey[]; message: string }[] }) =>
  error.issues.map((i) => `${i.path.map(String).join('.')}: ${i.message}`).join('; ');
