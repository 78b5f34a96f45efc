import { createRoute } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import { createRouter } from '../../shared/platform/http/app';
import { bearerToken } from '../../shared/platform/http/auth';
import { type AppEnv, publicCtxOf } from '../../shared/platform/contract/context';
import { defineFamily } from '../../shared/platform/http/family';
import { timingSafeEqual } from '../../shared/platform/contract/crypto';
import { AppError } from '../../shared/platform/contract/errors';
import { errors, json, jsonBody, serverErrors } from '../../shared/platform/http/openapi';
import * as s from './schemas';
import * as service from './service';

/** The operator API exists only when ADMIN_TOKEN is set; otherwise 404, saying how to turn it on. */
const requireAdmin: MiddlewareHandler<AppEnv> = async (c, next) => {
  const expected = c.get('services').config.ADMIN_TOKEN;
  if (!expected) throw new AppError('NOT_FOUND', 'Operator API disabled: start the server with ADMIN_TOKEN set (at least 16 characters) to use /admin/v1/*');
  const given = bearerToken(c.req.header('authorization'));
  if (!given || !timingSafeEqual(given, expected)) throw new AppError('UNAUTHORIZED', 'Invalid admin token');
  await next();
};

const tags = ['Operator'];
const base = { tags, middleware: [requireAdmin], security: [{ adminToken: [] }] };

export const createTenantRoute = createRoute({
  ...base,
  operationId: 'admin.createTenant',
  method: 'post' as const,
  path: '/admin/v1/tenants',
  summary: 'Create a verified tenant with its first key',
  description:
    'Creates a tenant whose e-mail counts as verified, at the given tier, and returns its first API key (shown only here). 409 when the e-mail is taken.',
  request: { body: jsonBody(s.CreateTenantBody) },
  responses: { 201: json(s.CreatedTenantSchema, 'Tenant created'), ...errors(400, 401, 404, 409, 413, 415), ...serverErrors() },
});

export const getTenantRoute = createRoute({
  ...base,
  operationId: 'admin.getTenant',
  method: 'get' as const,
  path: '/admin/v1/tenants/{tenant_id}',
  summary: 'Get a tenant',
  description: "The tenant's e-mail, tier and creation time.",
  request: { params: s.TenantParams },
  responses: { 200: json(s.TenantSchema, 'The tenant'), ...errors(400, 401, 404), ...serverErrors() },
});

export const patchTenantRoute = createRoute({
  ...base,
  operationId: 'admin.setTier',
  method: 'patch' as const,
  path: '/admin/v1/tenants/{tenant_id}',
  summary: "Change a tenant's tier",
  description: 'Sets the tier; limits and features follow at once. Answers the updated tenant.',
  request: { params: s.TenantParams, body: jsonBody(s.PatchTenantBody) },
  responses: { 200: json(s.TenantSchema, 'The updated tenant'), ...errors(400, 401, 404, 413, 415), ...serverErrors() },
});

export const mailRoute = createRoute({
  ...base,
  operationId: 'admin.listMail',
  method: 'get' as const,
  path: '/admin/v1/mail',
  summary: 'Mail stored by the outbox transport, newest first',
  description:
    'Messages the `outbox` mail transport stored for an address, with the token each carries (verification, invitations); for operators and tests, since that transport sends nothing.',
  request: { query: s.MailQuery },
  responses: { 200: json(s.MailList, 'Messages to that address'), ...errors(400, 401, 404), ...serverErrors() },
});

const router = createRouter()
  .openapi(createTenantRoute, async (c) => c.json(await service.createTenant(publicCtxOf(c, 'admin'), c.req.valid('json')), 201))
  .openapi(getTenantRoute, async (c) => c.json(await service.getTenant(publicCtxOf(c, 'admin'), { tenantId: c.req.valid('param').tenant_id }), 200))
  .openapi(patchTenantRoute, async (c) => {
    const input = { tenantId: c.req.valid('param').tenant_id, tier: c.req.valid('json').tier };
    return c.json(await service.setTier(publicCtxOf(c, 'admin'), input), 200);
  })
  .openapi(mailRoute, async (c) => c.json(await service.listMail(publicCtxOf(c, 'admin'), c.req.valid('query')), 200));

export default defineFamily({ name: 'admin', tag: { name: 'Operator', description: 'Operator API (ADMIN_TOKEN)' }, router });
