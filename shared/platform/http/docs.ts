import { Scalar } from '@scalar/hono-api-reference';
import type { Context } from 'hono';
import type { AppEnv } from '../contract/context';
import { AppError } from '../contract/errors';

/**
 * The reference UI at /docs: Scalar's page, with its standalone script served by us (pinned with
 * `@scalar/api-reference` in package.json) instead of an unpinned CDN, and no web fonts, so the page
 * renders offline. Each entry point supplies the script (`Services.docsScript`): Node reads it from
 * node_modules, the worker from its static assets (wrangler.toml `[assets]`).
 */
export const DOCS_SCRIPT_PATH = '/docs/scalar.js';

export const docsPage = Scalar({
  url: '/openapi.json',
  pageTitle: 'engram API',
  cdn: DOCS_SCRIPT_PATH,
  withDefaultFonts: false,
  telemetry: false,
  showDeveloperTools: 'never',
  // Selected from the start: without it the page says "No authentication selected" and the
  // request builder sends no key.
  authentication: { preferredSecurityScheme: 'bearerAuth' },
  // "Ask AI" talks to Scalar's hosted agent; not part of an offline reference.
  ...({ agent: { disabled: true } } as object),
});

export async function docsScript(c: Context<AppEnv>): Promise<Response> {
  const load = c.get('services').docsScript;
  if (!load) throw new AppError('NOT_FOUND', 'The documentation script is not served here');
  return load(c.req.raw);
}
