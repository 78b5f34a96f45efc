import { expect } from 'vitest';
import type { Tenant, TestEngine } from '../harness';

/**
 * The kinds of resource an id in a path or body can name, how to make one for a tenant, and what
 * an id of that kind that names nothing looks like. A new kind of id (a new family) fails the
 * security suite until it has an entry here: the suite never silently skips an id.
 */
export type IdKind =
  | 'memory'
  | 'space'
  | 'share'
  | 'compensation'
  | 'key'
  | 'tenant'
  | 'team'
  | 'invitation'
  | 'webhook'
  | 'delivery'
  | 'trace'
  | 'triple'
  | 'entity'
  | 'action'
  | 'agent'
  | 'mission'
  | 'checkpoint'
  | 'policy'
  | 'baseline'
  | 'erasure'
  | 'import';

const base62 = (n: number) =>
  Array.from(crypto.getRandomValues(new Uint8Array(n)), (b) => '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'[b % 62]).join('');

export const unknownId: Record<IdKind, () => string> = {
  memory: () => `urn:uuid:${crypto.randomUUID()}`,
  space: () => `urn:uuid:${crypto.randomUUID()}`,
  share: () => `shr_${base62(22)}`,
  compensation: () => `comp_${base62(22)}`,
  key: () => `key_${base62(22)}`,
  tenant: () => `ten_${base62(22)}`,
  team: () => `team_${base62(22)}`,
  invitation: () => `inv_${base62(22)}`,
  webhook: () => `wh_${base62(22)}`,
  delivery: () => `del_${base62(22)}`,
  trace: () => `trc_${base62(22)}`,
  triple: () => `urn:uuid:${crypto.randomUUID()}`,
  entity: () => `urn:uuid:${crypto.randomUUID()}`,
  action: () => `act_${base62(22)}`,
  agent: () => `agt_${base62(22)}`,
  mission: () => `msn_${base62(22)}`,
  checkpoint: () => `chk_${base62(22)}`,
  policy: () => `Policy-${base62(12)}`,
  baseline: () => `bl_${base62(22)}`,
  erasure: () => `ers_${base62(22)}`,
  import: () => `imp_${base62(22)}`,
};

/** Makes one resource of each kind for `owner` (an Enterprise tenant, so every feature is on). */
export async function makeResources(engine: TestEngine, owner: Tenant): Promise<Record<IdKind, string>> {
  const post = async <P extends string>(path: P, body: unknown) => {
    const res = await engine.request('POST', path, { key: owner.key, body });
    expect(res.status, `${path}: ${res.text}`).toBeLessThan(300);
    return res.body;
  };
  const now = engine.clock.now().getTime();
  const team = (await post('/v1/teams', { name: 'private team' })).team_id;
  const webhook = (await post('/v1/webhooks', { url: 'https://hooks.example.com/private', events: ['memory.created'] })).webhook_id;
  const memory = (await post('/v1/memories', { observation: 'A memory that belongs to its owner only.' })).id;
  const triple = await post('/v1/knowledge/triples', {
    subject: 'private subject',
    predicate: 'relates_to',
    object: 'private object',
    source_memory_id: memory,
  });
  const agent = (await post('/v1/agents', { name: 'private agent', provider: 'anthropic', model: 'claude-sonnet-4' })).agent_id;
  const mission = (await post('/v1/missions', { agent_id: agent, goal: 'A private mission' })).mission_id;
  const checkpoint = (await post(`/v1/missions/${mission}/checkpoints`, { label: 'private checkpoint' })).checkpoint_id;
  return {
    memory,
    space: (await post('/v1/context-spaces', { name: 'private space' })).space_id,
    share: (await post('/v1/spaces/share', { tag: 'private', email: `someone-${base62(8)}@example.com` })).share_id,
    compensation: (
      await post('/v1/compensations/preview', { rollback_from: new Date(now).toISOString(), rollback_to: new Date(now - 3_600_000).toISOString() })
    ).plan_id,
    key: owner.keyId,
    tenant: owner.tenantId,
    team,
    invitation: (await post(`/v1/teams/${team}/invite`, { email: `someone-${base62(8)}@example.com` })).invitation_id,
    webhook,
    delivery: (await post(`/v1/webhooks/${webhook}/test`, {})).delivery_id,
    trace: (await post('/v1/traces', { agent_id: 'private-agent' })).trace_id,
    triple: triple.triple_id,
    entity: triple.subject.entity_id,
    // Pending review (a large wire transfer), so it is also an approval that could be decided.
    action: (await post('/v1/actions', { action: 'http.post', params: { url: 'https://bank.example/wire', amount: 250000, memo: 'wire transfer' } })).action_id,
    agent,
    mission,
    checkpoint,
    baseline: (await post('/v1/eval/baselines', { query: 'private query', expected_observation: 'private observation' })).id,
    erasure: (await post('/v1/erasures', { tags: ['matches-nothing'], reason: 'a receipt of its owner only' })).erasure_id,
    import: (
      (
        await engine.request('POST', '/v1/import?format=jsonl', {
          key: owner.key,
          raw: JSON.stringify({ observation: 'An imported memory of its owner only.' }),
          headers: { 'content-type': 'application/x-ndjson' },
        })
      ).body as { id: string }
    ).id,
    policy: (await post('/v1/control/policies', { name: `Private-${base62(8)}`, rules: [{ match: 'private', severity: 'low' }] })).policy_name,
  };
}

/** Parameters and body fields that are not resource ids, with why. */
const notIds: Record<string, string> = {
  index: 'a position inside a compensation plan, not an id',
  agent_id: "a caller's free-form label for its agent on memories, traces and actions, not a resource of ours",
  approver_id: 'a free-form label of who decided an approval (an e-mail by default), recorded, not a resource of ours',
};

/** Routes where `agent_id` names a registered runtime agent (elsewhere it is a free-form label, or the id a new agent takes). */
const runtimeAgentRoutes = [/^\/v1\/agents\/\{agent_id\}/, /^\/v1\/missions$/, /^\/v1\/interventions$/];

/** The kind of resource a path parameter or body field names, or null when it names none. */
export function kindOf(path: string, name: string): IdKind | null | 'unknown' {
  if (name === 'agent_id' && runtimeAgentRoutes.some((r) => r.test(path))) return 'agent';
  if (name in notIds) return null;
  const byName: Record<string, IdKind> = {
    memory_id: 'memory',
    space_id: 'space',
    token: 'share',
    superseded_by: 'memory',
    owner_tenant_id: 'tenant',
    key_id: 'key',
    tenant_id: 'tenant',
    team_id: 'team',
    invitation_id: 'invitation',
    webhook_id: 'webhook',
    delivery_id: 'delivery',
    trace_id: 'trace',
    triple_id: 'triple',
    entity_id: 'entity',
    source_memory_id: 'memory',
    action_id: 'action',
    approval_id: 'action',
    mission_id: 'mission',
    checkpoint_id: 'checkpoint',
    policy_name: 'policy',
    baseline_id: 'baseline',
    erasure_id: 'erasure',
    import_id: 'import',
  };
  if (byName[name]) return byName[name];
  if (name === 'id') {
    if (path.startsWith('/v1/memories/') || path.startsWith('/console/memories/')) return 'memory';
    if (path.startsWith('/v1/compensations/')) return 'compensation';
  }
  return name === 'id' || name.endsWith('_id') || name.endsWith('_by') ? 'unknown' : null;
}

/**
 * Where the contract names 403 for a resource that exists but is not the caller's (errors:
 * "403 FORBIDDEN: No access to a space, or not owner or admin of a team or share"). Everywhere
 * else another tenant's resource must answer exactly as one that does not exist.
 */
export const specNamedForbidden: RegExp[] = [/^\/v1\/context-spaces\/\{space_id\}/, /^\/v1\/spaces\/share\/\{token\}/];
