import type { WebhookHeaders } from '../verify.js';
import { unwrapWebhook, type WebhookEvent } from '../webhooks.js';
import { type BodyOf, type CallOptions, type QueryOf, Resource } from './base.js';

/** Teams and their members (teams.*). */
export class Teams extends Resource {
  create(body: BodyOf<'teams.create'>, opts?: CallOptions) {
    return this.op('teams.create', [], { ...opts, body });
  }

  list(query?: QueryOf<'teams.list'>, opts?: CallOptions) {
    return this.paged('teams.list', [], query, opts);
  }

  join(body: BodyOf<'teams.join'>, opts?: CallOptions) {
    return this.op('teams.join', [], { ...opts, body });
  }

  get(teamId: string, opts?: CallOptions) {
    return this.op('teams.get', [teamId], opts);
  }

  rename(teamId: string, body: BodyOf<'teams.rename'>, opts?: CallOptions) {
    return this.op('teams.rename', [teamId], { ...opts, body });
  }

  delete(teamId: string, opts?: CallOptions): Promise<void> {
    return this.opAs<void, 'teams.delete'>('teams.delete', [teamId], opts);
  }

  invite(teamId: string, body: BodyOf<'teams.invite'>, opts?: CallOptions) {
    return this.op('teams.invite', [teamId], { ...opts, body });
  }

  changeRole(teamId: string, tenantId: string, body: BodyOf<'teams.changeRole'>, opts?: CallOptions) {
    return this.op('teams.changeRole', [teamId, tenantId], { ...opts, body });
  }

  removeMember(teamId: string, tenantId: string, opts?: CallOptions): Promise<void> {
    return this.opAs<void, 'teams.removeMember'>('teams.removeMember', [teamId, tenantId], opts);
  }
}

/** Webhooks and their deliveries (webhooks.*); `unwrap` checks a delivery and answers its event. */
export class Webhooks extends Resource {
  /**
   * A delivery your endpoint received, checked against the webhook's secret and answered as the
   * typed event; throws WebhookVerificationError when it is not signed with it (or too old).
   * Pass the raw body as received. No call to the API.
   */
  unwrap(rawBody: string | Uint8Array, headers: WebhookHeaders, secret: string): WebhookEvent {
    return unwrapWebhook(rawBody, headers, secret);
  }

  create(body: BodyOf<'webhooks.create'>, opts?: CallOptions) {
    return this.op('webhooks.create', [], { ...opts, body });
  }

  list(query?: QueryOf<'webhooks.list'>, opts?: CallOptions) {
    return this.paged('webhooks.list', [], query, opts);
  }

  get(webhookId: string, opts?: CallOptions) {
    return this.op('webhooks.get', [webhookId], opts);
  }

  update(webhookId: string, body: BodyOf<'webhooks.update'>, opts?: CallOptions) {
    return this.op('webhooks.update', [webhookId], { ...opts, body });
  }

  delete(webhookId: string, opts?: CallOptions) {
    return this.op('webhooks.delete', [webhookId], opts);
  }

  rotateSecret(webhookId: string, opts?: CallOptions) {
    return this.op('webhooks.rotateSecret', [webhookId], opts);
  }

  deliveries(webhookId: string, query?: QueryOf<'webhooks.deliveries'>, opts?: CallOptions) {
    return this.paged('webhooks.deliveries', [webhookId], query, opts);
  }

  test(webhookId: string, opts?: CallOptions) {
    return this.op('webhooks.test', [webhookId], opts);
  }

  redeliver(webhookId: string, deliveryId: string, opts?: CallOptions) {
    return this.op('webhooks.redeliver', [webhookId, deliveryId], opts);
  }
}

/** Registered agents and their capabilities (runtime.*Agent, runtime.*Capabilit*). */
export class Agents extends Resource {
  create(body: BodyOf<'runtime.createAgent'>, opts?: CallOptions) {
    return this.op('runtime.createAgent', [], { ...opts, body });
  }

  list(query?: QueryOf<'runtime.listAgents'>, opts?: CallOptions) {
    return this.paged('runtime.listAgents', [], query, opts);
  }

  get(agentId: string, opts?: CallOptions) {
    return this.op('runtime.getAgent', [agentId], opts);
  }

  update(agentId: string, body: BodyOf<'runtime.updateAgent'>, opts?: CallOptions) {
    return this.op('runtime.updateAgent', [agentId], { ...opts, body });
  }

  delete(agentId: string, opts?: CallOptions) {
    return this.op('runtime.deleteAgent', [agentId], opts);
  }

  createCapability(body: BodyOf<'runtime.createCapability'>, opts?: CallOptions) {
    return this.op('runtime.createCapability', [], { ...opts, body });
  }

  capabilities(query?: QueryOf<'runtime.listCapabilities'>, opts?: CallOptions) {
    return this.paged('runtime.listCapabilities', [], query, opts);
  }
}

const TRANSITIONS = {
  start: 'runtime.startMission',
  pause: 'runtime.pauseMission',
  resume: 'runtime.resumeMission',
  complete: 'runtime.completeMission',
  fail: 'runtime.failMission',
  cancel: 'runtime.cancelMission',
} as const;
type Transition = keyof typeof TRANSITIONS;

/** Missions, their checkpoints, transitions and interventions (runtime.*Mission*, runtime.*Intervention*). */
export class Missions extends Resource {
  create(body: BodyOf<'runtime.createMission'>, opts?: CallOptions) {
    return this.op('runtime.createMission', [], { ...opts, body });
  }

  list(query?: QueryOf<'runtime.listMissions'>, opts?: CallOptions) {
    return this.paged('runtime.listMissions', [], query, opts);
  }

  get(missionId: string, opts?: CallOptions) {
    return this.op('runtime.getMission', [missionId], opts);
  }

  /** POST /v1/missions/{mission_id}/{start|pause|resume|complete|fail|cancel}: the method of that transition. */
  transition(missionId: string, to: Transition, opts?: CallOptions) {
    return this.op(TRANSITIONS[to], [missionId], opts);
  }

  start(missionId: string, opts?: CallOptions) {
    return this.op('runtime.startMission', [missionId], opts);
  }

  pause(missionId: string, opts?: CallOptions) {
    return this.op('runtime.pauseMission', [missionId], opts);
  }

  resume(missionId: string, opts?: CallOptions) {
    return this.op('runtime.resumeMission', [missionId], opts);
  }

  complete(missionId: string, opts?: CallOptions) {
    return this.op('runtime.completeMission', [missionId], opts);
  }

  fail(missionId: string, opts?: CallOptions) {
    return this.op('runtime.failMission', [missionId], opts);
  }

  cancel(missionId: string, opts?: CallOptions) {
    return this.op('runtime.cancelMission', [missionId], opts);
  }

  createCheckpoint(missionId: string, body: BodyOf<'runtime.createCheckpoint'>, opts?: CallOptions) {
    return this.op('runtime.createCheckpoint', [missionId], { ...opts, body });
  }

  checkpoints(missionId: string, query?: QueryOf<'runtime.listCheckpoints'>, opts?: CallOptions) {
    return this.paged('runtime.listCheckpoints', [missionId], query, opts);
  }

  previewRollback(missionId: string, query?: QueryOf<'runtime.previewRollback'>, opts?: CallOptions) {
    return this.op('runtime.previewRollback', [missionId], { ...opts, query });
  }

  rollback(missionId: string, body: BodyOf<'runtime.rollbackMission'>, opts?: CallOptions) {
    return this.op('runtime.rollbackMission', [missionId], { ...opts, body });
  }

  recordIntervention(body: BodyOf<'runtime.recordIntervention'>, opts?: CallOptions) {
    return this.op('runtime.recordIntervention', [], { ...opts, body });
  }

  interventions(query?: QueryOf<'runtime.listInterventions'>, opts?: CallOptions) {
    return this.paged('runtime.listInterventions', [], query, opts);
  }
}

/** Usage against the tier's limits (usage.*). */
export class Usage extends Resource {
  get(opts?: CallOptions) {
    return this.op('usage.get', [], opts);
  }

  dashboard(opts?: CallOptions) {
    return this.op('usage.dashboard', [], opts);
  }

  milestones(opts?: CallOptions) {
    return this.op('usage.milestones', [], opts);
  }
}

/** The account's API keys (keys.*). */
export class Keys extends Resource {
  list(opts?: CallOptions) {
    return this.op('keys.list', [], opts);
  }

  createRestricted(body: BodyOf<'keys.createRestricted'>, opts?: CallOptions) {
    return this.op('keys.createRestricted', [], { ...opts, body });
  }

  revoke(body: BodyOf<'keys.revoke'>, opts?: CallOptions) {
    return this.op('keys.revoke', [], { ...opts, body });
  }

  /** POST /v1/keys (keys.signup): a new account and its first key, where the deployment allows sign-up (no key needed). */
  signup(body: BodyOf<'keys.signup'>, opts?: CallOptions) {
    return this.op('keys.signup', [], { ...opts, body });
  }

  /** POST /v1/verify (keys.verify): confirm the e-mail address of a sign-up with its token. */
  verify(body: BodyOf<'keys.verify'>, opts?: CallOptions) {
    return this.op('keys.verify', [], { ...opts, body });
  }

  /** A new key for this one; the client keeps using the old key, so build a new Engram with the answer. */
  rotate(body?: BodyOf<'keys.rotate'>, opts?: CallOptions) {
    return this.op('keys.rotate', [], { ...opts, body });
  }
}

/** Operator calls; the client's `apiKey` must be the deployment's ADMIN_TOKEN (admin.*). */
export class Admin extends Resource {
  createTenant(body: BodyOf<'admin.createTenant'>, opts?: CallOptions) {
    return this.op('admin.createTenant', [], { ...opts, body });
  }

  getTenant(tenantId: string, opts?: CallOptions) {
    return this.op('admin.getTenant', [tenantId], opts);
  }

  /** GET /admin/v1/mail (admin.listMail): the mail the deployment would have sent (its dev outbox). */
  listMail(query: QueryOf<'admin.listMail'>, opts?: CallOptions) {
    return this.op('admin.listMail', [], { ...opts, query });
  }

  setTier(tenantId: string, tier: BodyOf<'admin.setTier'>['tier'], opts?: CallOptions) {
    return this.op('admin.setTier', [tenantId], { ...opts, body: { tier } });
  }
}
