import { createRouter } from '../../shared/app';
import { authOf } from '../../shared/auth';
import * as routes from './routes';
import * as service from './service';

export const keysRouter = createRouter()
  .openapi(routes.signupRoute, async (c) => {
    const { email } = c.req.valid('json');
    const services = c.get('services');
    return c.json(await service.signup(services, { email, clientIp: services.clientIp(c) }), 201);
  })
  .openapi(routes.verifyRoute, async (c) => {
    const body = c.req.valid('json');
    return c.json(await service.verify(c.get('services'), { ...body, requestId: c.get('requestId') }), 200);
  })
  .openapi(routes.rotateRoute, async (c) => {
    const auth = authOf(c);
    const body = c.req.valid('json') ?? {};
    const expiresAt = body.expires_at ? new Date(body.expires_at) : undefined;
    const actor = { tenantId: auth.tenantId, keyId: auth.keyId, requestId: c.get('requestId') };
    return c.json(await service.rotate(c.get('services'), auth, actor, { expiresAt }), 200);
  })
  .openapi(routes.listRoute, async (c) => c.json(await service.list(c.get('services'), authOf(c)), 200))
  .openapi(routes.revokeRoute, async (c) => {
    const auth = authOf(c);
    const { key_id } = c.req.valid('json');
    const actor = { tenantId: auth.tenantId, keyId: auth.keyId, requestId: c.get('requestId') };
    return c.json(await service.revoke(c.get('services'), auth, actor, { keyId: key_id }), 200);
  });
