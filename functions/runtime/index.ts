import { createRouter } from '../../shared/platform/http/app';
import { ctxOf } from '../../shared/platform/contract/context';
import { defineFamily } from '../../shared/platform/http/family';
import { recordIntervention, listInterventions } from './interventions';
import * as missions from './missions';
import * as routes from './routes';
import * as service from './service';
import { runFromRoute } from '../../shared/platform/http/verb';
import { createAgentVerb, createCapabilityVerb, restoreAgentVerb, restoreCapabilityVerb } from './verbs';
import { VERBS } from './transitions';

type Params<K extends string> = { req: { valid(t: 'param'): Record<K, string> } };
const agentId = (c: Params<'agent_id'>) => c.req.valid('param').agent_id;
const missionId = (c: Params<'mission_id'>) => c.req.valid('param').mission_id;

const router = createRouter()
  .openapi(routes.createCapabilityRoute, async (c) => c.json(await runFromRoute(createCapabilityVerb, c), 201))
  .openapi(routes.listCapabilitiesRoute, async (c) => c.json(await service.listCapabilities(ctxOf(c), c.req.valid('query')), 200))
  .openapi(routes.createAgentRoute, async (c) => c.json(await runFromRoute(createAgentVerb, c), 201))
  .openapi(routes.listAgentsRoute, async (c) => c.json(await service.listAgents(ctxOf(c), c.req.valid('query')), 200))
  .openapi(routes.getAgentRoute, async (c) => c.json(await service.getAgent(ctxOf(c), { agentId: agentId(c) }), 200))
  .openapi(routes.updateAgentRoute, async (c) => c.json(await service.updateAgent(ctxOf(c), { agentId: agentId(c), ...c.req.valid('json') }), 200))
  .openapi(routes.deleteAgentRoute, async (c) => c.json(await service.deleteAgent(ctxOf(c), { agentId: agentId(c) }), 200))
  .openapi(routes.createMissionRoute, async (c) => c.json(await missions.createMission(ctxOf(c), c.req.valid('json')), 201))
  .openapi(routes.listMissionsRoute, async (c) => c.json(await missions.listMissions(ctxOf(c), c.req.valid('query')), 200))
  .openapi(routes.getMissionRoute, async (c) => c.json(await missions.getMission(ctxOf(c), { missionId: missionId(c) }), 200))
  .openapi(routes.createCheckpointRoute, async (c) =>
    c.json(await missions.createCheckpoint(ctxOf(c), { missionId: missionId(c), ...c.req.valid('json') }), 201),
  )
  .openapi(routes.listCheckpointsRoute, async (c) =>
    c.json(await missions.listCheckpoints(ctxOf(c), { missionId: missionId(c), ...c.req.valid('query') }), 200),
  )
  .openapi(routes.rollbackRoute, async (c) => c.json(await missions.rollback(ctxOf(c), { missionId: missionId(c), ...c.req.valid('json') }), 200))
  .openapi(routes.previewRollbackRoute, async (c) =>
    c.json(await missions.previewRollback(ctxOf(c), { missionId: missionId(c), ...c.req.valid('query') }), 200),
  )
  .openapi(routes.recordInterventionRoute, async (c) => c.json(await recordIntervention(ctxOf(c), c.req.valid('json')), 201))
  .openapi(routes.listInterventionsRoute, async (c) => c.json(await listInterventions(ctxOf(c), c.req.valid('query')), 200));

for (const verb of VERBS) {
  router.openapi(routes.transitionRoutes[verb], async (c) =>
    c.json(await missions.transition(ctxOf(c), { missionId: c.req.valid('param').mission_id, verb }), 200),
  );
}

export default defineFamily({
  name: 'runtime',
  tag: {
    name: 'Runtime',
    description: 'Agents with capability packs, missions with a lifecycle and checkpoints, mission rollback and supervisor interventions (all plans)',
  },
  router,
  restore: {
    pack: { restore: (ctx, body) => restoreCapabilityVerb(ctx, body) },
    agent: { restore: (ctx, body) => restoreAgentVerb(ctx, body) },
  },
});
