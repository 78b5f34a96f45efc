import { paginate } from '../pages.js';
import { type BodyOf, type CallOptions, type QueryOf, Resource, seg } from './base.js';

/** Teams and their members (teams.*). */
export class Teams extends Resource {
  create(body: BodyOf<'teams.create'>, opts?: CallOptions) {
    return this.call<'teams.create'>('POST', '/v1/teams', { ...opts, body });
  }

  list(query?: QueryOf<'teams.list'>, opts?: CallOptions) {
    return paginate('teams', query, (q) => this.call<'teams.list'>('GET', '/v1/teams', { ...opts, query: q }));
  }

  join(body: BodyOf<'teams.join'>, opts?: CallOptions) {
    return this.call<'teams.join'>('POST', '/v1/teams/join', { ...opts, body });
  }

  get(teamId: string, opts?: CallOptions) {
    return this.call<'teams.get'>('GET', `/v1/teams/${seg(teamId)}`, opts);
  }

  rename(teamId: string, body: BodyOf<'teams.rename'>, opts?: CallOptions) {
    return this.call<'teams.rename'>('PUT', `/v1/teams/${seg(teamId)}`, { ...opts, body });
  }

  delete(teamId: string, opts?: CallOptions): Promise<void> {
    return this.transport.request<void>('DELETE', `/v1/teams/${seg(teamId)}`, opts);
  }

  invite(teamId: string, body: BodyOf<'teams.invite'>, opts?: CallOptions) {
    return this.call<'teams.invite'>('POST', `/v1/teams/${seg(teamId)}/invite`, { ...opts, body });
  }

  changeRole(teamId: string, tenantId: string, body: BodyOf<'teams.changeRole'>, opts?: CallOptions) {
    return this.call<'teams.changeRole'>('PUT', `/v1/teams/${seg(teamId)}/members/${seg(tenantId)}`, { ...opts, body });
  }

  removeMember(teamId: string, tenantId: string, opts?: CallOptions): Promise<void> {
    return this.transport.request<void>('DELETE', `/v1/teams/${seg(teamId)}/members/${seg(tenantId)}`, opts);
  }
}

/** Webhooks and their deliveries (webhooks.*); `verifyWebhook` checks a delivery's signature. */
export class Webhooks extends Resource {
  create(body: BodyOf<'webhooks.create'>, opts?: CallOptions) {
    return this.call<'webhooks.create'>('POST', '/v1/webhooks', { ...opts, body });
  }

  list(query?: QueryOf<'webhooks.list'>, opts?: CallOptions) {
    return paginate('webhooks', query, (q) => this.call<'webhooks.list'>('GET', '/v1/webhooks', { ...opts, query: q }));
  }

  get(webhookId: string, opts?: CallOptions) {
    return this.call<'webhooks.get'>('GET', `/v1/webhooks/${seg(webhookId)}`, opts);
  }

  update(webhookId: string, body: BodyOf<'webhooks.update'>, opts?: CallOptions) {
    return this.call<'webhooks.update'>('PUT', `/v1/webhooks/${seg(webhookId)}`, { ...opts, body });
  }

  delete(webhookId: string, opts?: CallOptions) {
    return this.call<'webhooks.delete'>('DELETE', `/v1/webhooks/${seg(webhookId)}`, opts);
  }

  rotateSecret(webhookId: string, opts?: CallOptions) {
    return this.call<'webhooks.rotateSecret'>('POST', `/v1/webhooks/${seg(webhookId)}/rotate-secret`, opts);
  }

  deliveries(webhookId: string, query?: QueryOf<'webhooks.deliveries'>, opts?: CallOptions) {
    return paginate('deliveries', query, (q) => this.call<'webhooks.deliveries'>('GET', `/v1/webhooks/${seg(webhookId)}/deliveries`, { ...opts, query: q }));
  }

  test(webhookId: string, opts?: CallOptions) {
    return this.call<'webhooks.test'>('POST', `/v1/webhooks/${seg(webhookId)}/test`, opts);
  }

  redeliver(webhookId: string, deliveryId: string, opts?: CallOptions) {
    return this.call<'webhooks.redeliver'>('POST', `/v1/webhooks/${seg(webhookId)}/deliveries/${seg(deliveryId)}/redeliver`, opts);
  }
}

/** Registered agents and their capabilities (runtime.*Agent, runtime.*Capabilit*). */
export class Agents extends Resource {
  create(body: BodyOf<'runtime.createAgent'>, opts?: CallOptions) {
    return this.call<'runtime.createAgent'>('POST', '/v1/agents', { ...opts, body });
  }

  list(query?: QueryOf<'runtime.listAgents'>, opts?: CallOptions) {
    return paginate('agents', query, (q) => this.call<'runtime.listAgents'>('GET', '/v1/agents', { ...opts, query: q }));
  }

  get(agentId: string, opts?: CallOptions) {
    return this.call<'runtime.getAgent'>('GET', `/v1/agents/${seg(agentId)}`, opts);
  }

  update(agentId: string, body: BodyOf<'runtime.updateAgent'>, opts?: CallOptions) {
    return this.call<'runtime.updateAgent'>('PATCH', `/v1/agents/${seg(agentId)}`, { ...opts, body });
  }

  delete(agentId: string, opts?: CallOptions) {
    return this.call<'runtime.deleteAgent'>('DELETE', `/v1/agents/${seg(agentId)}`, opts);
  }

  createCapability(body: BodyOf<'runtime.createCapability'>, opts?: CallOptions) {
    return this.call<'runtime.createCapability'>('POST', '/v1/capabilities', { ...opts, body });
  }

  capabilities(query?: QueryOf<'runtime.listCapabilities'>, opts?: CallOptions) {
    return paginate('capabilities', query, (q) => this.call<'runtime.listCapabilities'>('GET', '/v1/capabilities', { ...opts, query: q }));
  }
}

type Transition = 'start' | 'pause' | 'resume' | 'complete' | 'fail' | 'cancel';

/** Missions, their checkpoints, transitions and interventions (runtime.*Mission*, runtime.*Intervention*). */
export class Missions extends Resource {
  create(body: BodyOf<'runtime.createMission'>, opts?: CallOptions) {
    return this.call<'runtime.createMission'>('POST', '/v1/missions', { ...opts, body });
  }

  list(query?: QueryOf<'runtime.listMissions'>, opts?: CallOptions) {
    return paginate('missions', query, (q) => this.call<'runtime.listMissions'>('GET', '/v1/missions', { ...opts, query: q }));
  }

  get(missionId: string, opts?: CallOptions) {
    return this.call<'runtime.getMission'>('GET', `/v1/missions/${seg(missionId)}`, opts);
  }

  /** POST /v1/missions/{mission_id}/{start|pause|resume|complete|fail|cancel}. */
  transition(missionId: string, to: Transition, opts?: CallOptions) {
    return this.call<'runtime.startMission'>('POST', `/v1/missions/${seg(missionId)}/${to}`, opts);
  }

  createCheckpoint(missionId: string, body: BodyOf<'runtime.createCheckpoint'>, opts?: CallOptions) {
    return this.call<'runtime.createCheckpoint'>('POST', `/v1/missions/${seg(missionId)}/checkpoints`, { ...opts, body });
  }

  checkpoints(missionId: string, query?: QueryOf<'runtime.listCheckpoints'>, opts?: CallOptions) {
    return paginate('checkpoints', query, (q) =>
      this.call<'runtime.listCheckpoints'>('GET', `/v1/missions/${seg(missionId)}/checkpoints`, { ...opts, query: q }),
    );
  }

  previewRollback(missionId: string, query?: QueryOf<'runtime.previewRollback'>, opts?: CallOptions) {
    return this.call<'runtime.previewRollback'>('GET', `/v1/missions/${seg(missionId)}/rollback/preview`, { ...opts, query });
  }

  rollback(missionId: string, body: BodyOf<'runtime.rollbackMission'>, opts?: CallOptions) {
    return this.call<'runtime.rollbackMission'>('POST', `/v1/missions/${seg(missionId)}/rollback`, { ...opts, body });
  }

  recordIntervention(body: BodyOf<'runtime.recordIntervention'>, opts?: CallOptions) {
    return this.call<'runtime.recordIntervention'>('POST', '/v1/interventions', { ...opts, body });
  }

  interventions(query?: QueryOf<'runtime.listInterventions'>, opts?: CallOptions) {
    return paginate('interventions', query, (q) => this.call<'runtime.listInterventions'>('GET', '/v1/interventions', { ...opts, query: q }));
  }
}

/** Usage against the tier's limits (usage.*). */
export class Usage extends Resource {
  get(opts?: CallOptions) {
    return this.call<'usage.get'>('GET', '/v1/usage', opts);
  }

  dashboard(opts?: CallOptions) {
    return this.call<'usage.dashboard'>('GET', '/v1/dashboard', opts);
  }

  milestones(opts?: CallOptions) {
    return this.call<'usage.milestones'>('GET', '/v1/milestones', opts);
  }
}

/** The account's API keys (keys.*). */
export class Keys extends Resource {
  list(opts?: CallOptions) {
    return this.call<'keys.list'>('GET', '/v1/keys', opts);
  }

  createRestricted(body: BodyOf<'keys.createRestricted'>, opts?: CallOptions) {
    return this.call<'keys.createRestricted'>('POST', '/v1/keys/restricted', { ...opts, body });
  }

  revoke(body: BodyOf<'keys.revoke'>, opts?: CallOptions) {
    return this.call<'keys.revoke'>('POST', '/v1/keys/revoke', { ...opts, body });
  }

  /** A new key for this one; the client keeps using the old key, so build a new Engram with the answer. */
  rotate(body?: BodyOf<'keys.rotate'>, opts?: CallOptions) {
    return this.call<'keys.rotate'>('POST', '/v1/keys/rotate', { ...opts, body });
  }
}

/** Operator calls; the client's `apiKey` must be the deployment's ADMIN_TOKEN (admin.*). */
export class Admin extends Resource {
  createTenant(body: BodyOf<'admin.createTenant'>, opts?: CallOptions) {
    return this.call<'admin.createTenant'>('POST', '/admin/v1/tenants', { ...opts, body });
  }

  getTenant(tenantId: string, opts?: CallOptions) {
    return this.call<'admin.getTenant'>('GET', `/admin/v1/tenants/${seg(tenantId)}`, opts);
  }

  setTier(tenantId: string, tier: BodyOf<'admin.setTier'>['tier'], opts?: CallOptions) {
    return this.call<'admin.setTier'>('PATCH', `/admin/v1/tenants/${seg(tenantId)}`, { ...opts, body: { tier } });
  }
}
