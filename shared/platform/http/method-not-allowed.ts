import type { Hono } from 'hono';
import { methodNotAllowed } from 'hono/method-not-allowed';
import type { AppEnv } from '../contract/context';
import { AppError, errorBody } from '../contract/errors';
import { newId } from '../contract/ids';

const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const rank = (method: string) => {
  const i = METHOD_ORDER.indexOf(method);
  return i < 0 ? METHOD_ORDER.length : i;
};

/**
 * A request no route matched, at a path that does have routes for other methods: `405` with the
 * one error body and an `Allow` header listing them (HEAD comes with GET), in a fixed order so the
 * header does not depend on which family registered first. Hono's middleware reads `app.routes`
 * on the first miss, when every family is registered. It is the innermost of the root middleware,
 * so tracing and metrics see the 405, not the 404 it replaces.
 */
export function answerMethodNotAllowed(app: Hono<AppEnv>) {
  return methodNotAllowed<AppEnv>({
    app,
    onMethodNotAllowed: (c, methods) => {
      const allow = [...methods].sort((a, b) => rank(a) - rank(b)).join(', ');
      const err = new AppError('METHOD_NOT_ALLOWED', `${c.req.method} is not allowed on ${c.req.path}; allowed: ${allow}`);
      return c.json(errorBody(err, c.get('requestId') ?? newId('request')), 405, { Allow: allow });
    },
  });
}
