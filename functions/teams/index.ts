import { createRouter } from '../../shared/platform/http/app';
import { ctxOf } from '../../shared/platform/contract/context';
import { defineFamily } from '../../shared/platform/http/family';
import * as routes from './routes';
import * as service from './service';

const router = createRouter()
  .openapi(routes.createRoute, async (c) => c.json(await service.createTeam(ctxOf(c), c.req.valid('json')), 201))
  .openapi(routes.listRoute, async (c) => c.json(await service.listTeams(ctxOf(c), c.req.valid('query')), 200))
  .openapi(routes.joinRoute, async (c) => c.json(await service.join(ctxOf(c), c.req.valid('json')), 200))
  .openapi(routes.getRoute, async (c) => c.json(await service.getTeam(ctxOf(c), { teamId: c.req.valid('param').team_id }), 200))
  .openapi(routes.renameRoute, async (c) => c.json(await service.renameTeam(ctxOf(c), { teamId: c.req.valid('param').team_id, ...c.req.valid('json') }), 200))
  .openapi(routes.deleteRoute, async (c) => {
    await service.deleteTeam(ctxOf(c), { teamId: c.req.valid('param').team_id });
    return c.body(null, 204);
  })
  .openapi(routes.inviteRoute, async (c) => c.json(await service.invite(ctxOf(c), { teamId: c.req.valid('param').team_id, ...c.req.valid('json') }), 201))
  .openapi(routes.roleRoute, async (c) => {
    const { team_id, tenant_id } = c.req.valid('param');
    return c.json(await service.changeRole(ctxOf(c), { teamId: team_id, tenantId: tenant_id, role: c.req.valid('json').role }), 200);
  })
  .openapi(routes.removeRoute, async (c) => {
    const { team_id, tenant_id } = c.req.valid('param');
    await service.removeMember(ctxOf(c), { teamId: team_id, tenantId: tenant_id });
    return c.body(null, 204);
  });

export default defineFamily({ name: 'teams', tag: { name: 'Teams', description: 'Teams with roles: owner, admin, member, readonly' }, router });
