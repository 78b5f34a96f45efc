import type { Context } from 'hono';
import { type AppEnv, ctxOf, type TenantCtx } from '../../shared/platform/contract/context';
import { AppError } from '../../shared/platform/contract/errors';
import type { ConsoleContext } from './http';
import type { Viewer } from './views/layout';

/** Who is signed in, as the layout shows them, with the session's CSRF token for its forms. */
export const viewerOf = (c: ConsoleContext): Viewer => {
  const { auth } = tenantOf(c);
  return { email: auth.email, tier: auth.tier, csrfToken: c.get('session').csrfToken };
};

/**
 * The session's tenant context, as the API's handlers get it: every page calls the family verbs
 * with it, and the verbs apply their own scope, tier gate and input schemas (docs/architecture.md#verbs).
 */
export const tenantOf = (c: ConsoleContext): TenantCtx => ctxOf(c as unknown as Context<AppEnv>);

/** A refusal (4xx) as the text the API answers, for the page to show; anything else is thrown on. */
export const messageOf = (err: unknown): string => {
  if (err instanceof AppError && err.status < 500) return err.message;
  throw err;
};
