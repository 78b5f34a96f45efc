import { runFromRoute } from '../../shared/platform/http/verb';
import { createRestrictedVerb } from './verbs';
import { createRouter } from '../../shared/platform/http/app';
import { ctxOf, publicCtxOf } from '../../shared/platform/contract/context';
import { defineFamily } from '../../shared/platform/http/family';
import * as q from './queries';
import * as routes from './routes';
import * as service from './service';

const router = createRouter()
  .openapi(routes.signupRoute, async (c) => {
    const { email } = c.req.valid('json');
    const clientIp = c.get('services').clientIp(c);
    return c.json(await service.signup(publicCtxOf(c, 'signup'), { email, clientIp }), 201);
  })
  .openapi(routes.verifyRoute, async (c) => {
    const clientIp = c.get('services').clientIp(c);
    return c.json(await service.verify(publicCtxOf(c, 'signup'), { ...c.req.valid('json'), clientIp }), 200);
  })
  .openapi(routes.rotateRoute, async (c) => {
    const body = c.req.valid('json') ?? {};
    return c.json(await service.rotate(ctxOf(c), { expiresAt: body.expires_at }), 200);
  })
  .openapi(routes.restrictedRoute, async (c) => c.json(await runFromRoute(createRestrictedVerb, c), 201))
  .openapi(routes.listRoute, async (c) => c.json(await service.list(ctxOf(c)), 200))
  .openapi(routes.revokeRoute, async (c) => c.json(await service.revoke(ctxOf(c), { keyId: c.req.valid('json').key_id }), 200));

export default defineFamily({
  name: 'keys',
  tag: { name: 'Keys', description: 'Signup, verification, rotation, revocation' },
  router,
  maintenance: { expired_rate_windows: ({ db, now }) => q.deleteExpiredRateWindows(db, now) },
});

/** The signup limit, which the API reference's front page states. */
export { SIGNUP_WINDOW_MS, SIGNUPS_PER_IP } from './service';
