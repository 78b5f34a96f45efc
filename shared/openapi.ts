import { createRoute, z } from '@hono/zod-openapi';
import { optionalKey, requireKey } from './auth';

export const ErrorSchema = z
  .object({
    error: z.string().openapi({ example: 'importance: Too big: expected number to be <=10' }),
    code: z.string().openapi({ example: 'VALIDATION_ERROR' }),
    status: z.number().int().openapi({ example: 400 }),
    message: z.string(),
    request_id: z.string().openapi({ example: 'req_4f9Qw2b8Zr1LmT0aXcVe3K' }),
    details: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
    usage: z
      .object({
        current: z.number(),
        limit: z.number().nullable(),
        plan: z.string(),
        resets_at: z.string(),
      })
      .optional()
      .openapi({ description: 'On 429: the counter that ran out' }),
    upgrade_url: z.string().optional(),
    required_tier: z.string().optional(),
    current_tier: z.string().optional(),
  })
  .openapi('Error');

const descriptions: Record<number, string> = {
  400: 'Invalid input (VALIDATION_ERROR, INVALID_TOKEN)',
  401: 'Missing, unknown, revoked or expired key (UNAUTHORIZED)',
  403: 'Tier or ownership refusal',
  404: 'Unknown resource (NOT_FOUND)',
  409: 'Conflict',
  413: 'Body larger than 1 MiB',
  422: 'Unprocessable (INVALID_RANGE, webhook validation)',
  429: 'Rate or quota limit (RATE_LIMITED); carries usage and Retry-After',
  500: 'Internal error',
  503: 'Dependency unavailable',
};

/** OpenAPI error responses for the given statuses, all with the one error body. */
export function errors(...statuses: number[]) {
  return Object.fromEntries(
    statuses.map((s) => [s, { description: descriptions[s] ?? 'Error', content: { 'application/json': { schema: ErrorSchema } } }]),
  ) as Record<number, { description: string; content: { 'application/json': { schema: typeof ErrorSchema } } }>;
}

export const json = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { 'application/json': { schema } },
});

export const jsonBody = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { 'application/json': { schema } },
});

type RouteConfig = Parameters<typeof createRoute>[0];

/** A route that needs a key: authentication, rate limit and quota run before the handler. */
export function keyRoute<const R extends Omit<RouteConfig, 'middleware' | 'security'>>(config: R) {
  return createRoute({
    ...config,
    middleware: [requireKey] as const,
    security: [{ bearerAuth: [] }],
    responses: { ...errors(401, 429), ...config.responses },
  } as R & { middleware: [typeof requireKey]; security: { bearerAuth: string[] }[] });
}

/** A public route that shows more to a caller with a valid key. */
export function optionalKeyRoute<const R extends Omit<RouteConfig, 'middleware' | 'security'>>(config: R) {
  return createRoute({
    ...config,
    middleware: [optionalKey] as const,
    security: [{}, { bearerAuth: [] }],
  } as R & { middleware: [typeof optionalKey] });
}

export const publicRoute = <const R extends RouteConfig>(config: R) => createRoute(config);
