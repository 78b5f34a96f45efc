import { createRoute } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import { createRouter } from '../../shared/app';
import { bearerToken } from '../../shared/auth';
import type { AppEnv } from '../../shared/context';
import { timingSafeEqual } from '../../shared/crypto';
import { AppError } from '../../shared/errors';
import { errors, json, jsonBody } from '../../shared/openapi';
import * as s from './schemas';
import * as service from './service';

/** The operator API exists only when ADMIN_TOKEN is set; otherwise it answers like any unknown path. */
const requireAdmin: MiddlewareHandler<AppEnv> = async (c, next) => {
  const expected = c.get('services').config.ADMIN_TOKEN;
  if (!expected) throw new AppError('NOT_FOUND', `No route for ${c.req.method} ${c.req.path}`);
  const given = bearerToken(c.req.header('authorization'));
  if (!given || !timingSafeEqual(given, expected)) throw new AppError('UNAUTHORIZED', 'Invalid admin token');
  await next();
};

const tags = ['Operator'];
const base = { tags, middleware: [requireAdmin], security: [{ adminToken: [] }] };

const createTenantRoute = createRoute({
  ...base,
  method: 'post',
  path: '/admin/v1/tenants',
  summary: 'Create a verified tenant with its first key',
  request: { body: jsonBody(s.CreateTenantBody) },
  responses: { 201: json(s.CreatedTenantSchema, 'Tenant created'), ...errors(400, 401, 404, 409) },
});

const getTenantRoute = createRoute({
  ...base,
  method: 'get',
  path: '/admin/v1/tenants/{tenant_id}',
  summary: 'Get a tenant',
  request: { params: s.TenantParams },
  responses: { 200: json(s.TenantSchema, 'The tenant'), ...errors(401, 404) },
});

const patchTenantRoute = createRoute({
  ...base,
  method: 'patch',
  path: '/admin/v1/tenants/{tenant_id}',
  summary: "Change a tenant's tier",
  request: { params: s.TenantParams, body: jsonBody(s.PatchTenantBody) },
  responses: { 200: json(s.TenantSchema, 'The updated tenant'), ...errors(400, 401, 404) },
});

const mailRoute = createRoute({
  ...base,
  method: 'get',
  path: '/admin/v1/mail',
  summary: 'Mail stored by the outbox transport, newest first',
  request: { query: s.MailQuery },
  responses: { 200: json(s.MailList, 'Messages to that address'), ...errors(400, 401, 404) },
});

export const adminRouter = createRouter()
  .openapi(createTenantRoute, async (c) => {
    const body = c.req.valid('json');
    return c.json(await service.createTenant(c.get('services'), { ...body, requestId: c.get('requestId') }), 201);
  })
  .openapi(getTenantRoute, async (c) => c.json(await service.getTenant(c.get('services'), c.req.valid('param').tenant_id), 200))
  .openapi(patchTenantRoute, async (c) => {
    const { tenant_id } = c.req.valid('param');
    const { tier } = c.req.valid('json');
    return c.json(await service.setTier(c.get('services'), { tenantId: tenant_id, tier, requestId: c.get('requestId') }), 200);
  })
  .openapi(mailRoute, async (c) => c.json(await service.listMail(c.get('services'), c.req.valid('query').to), 200));
