import { errors as errorsOf, json, keyRoute } from '../../shared/platform/http/openapi';
import { routeOf } from '../../shared/platform/http/verb';
import { MAX_EVALUATED_CHARS, TIME_BUDGET_MS, WORK_BUDGET_CHARS } from '../../shared/control/budget';
import * as s from './schemas';
import { createPolicyVerb, listPoliciesVerb, replacePolicyVerb, testPoliciesVerb } from './verbs';

const tags = ['Policies'];
const invalid = {
  400: {
    description: 'Invalid policy (svc_ram.v1.control.invalid_policy, `details` names each bad field such as `rules[3].match`), or other invalid input',
    content: { 'application/json': { schema: errorsOf(400)[400].content['application/json'].schema } },
  },
};
const notFound = {
  404: {
    description: 'No policy of that name at that scope (svc_ram.v1.control.policy_not_found)',
    content: { 'application/json': { schema: errorsOf(404)[404].content['application/json'].schema } },
  },
};

/** JSON (the documented default) or the same document as YAML. */
const policyBody = <T extends typeof s.PolicyBody | typeof s.ReplaceBody>(schema: T) => ({
  required: true,
  content: {
    'application/json': { schema },
    'application/yaml': { schema: s.YamlBody },
  },
});

const bodies =
  'The body is JSON, or the same document as YAML with `Content-Type: application/yaml` (also `application/x-yaml`, `text/yaml`). Any invalid policy (unparsable JSON or YAML, a missing name or rules, no rules, an invalid or unsupported RE2 pattern, a bad name, a confidence outside 0 to 1, an unknown severity or step type) is 400 svc_ram.v1.control.invalid_policy naming the field.';
const limits = `At most ${s.MAX_RULES} rules and ${s.MAX_WHITELISTED_DOMAINS} whitelisted domains; patterns up to 1,000 characters, run on RE2 (linear time; no backreferences or lookarounds).`;

export const createRoute = keyRoute({
  ...routeOf(createPolicyVerb),
  path: '/v1/control/policies',
  tags,
  summary: 'Create a policy, or update the one of that name (upsert)',
  description: `A new policy answers 201 \`action: "created"\` with version 1; an existing name at the same scope is replaced, its version incremented, 200 \`action: "updated"\`. \`agent_id\` makes the policy agent-scoped (Pro+, else 403 svc_ram.v1.tier.feature_required). The tier's limit counts enabled custom policies at every scope (Starter 5, Pro 25, Enterprise unlimited); at the limit 403 svc_ram.v1.tier.limit_exceeded. The built-in names cannot be taken. ${bodies} ${limits}`,
  request: { body: policyBody(s.PolicyBody) },
  responses: { 201: json(s.PolicyWrite, 'Created'), 200: json(s.PolicyWrite, 'An existing policy updated'), ...invalid },
});

export const listRoute = keyRoute({
  ...routeOf(listPoliciesVerb),
  path: '/v1/control/policies',
  tags,
  summary: 'Built-in and custom policies, with the evaluation and approval modes',
  description:
    "Built-ins first (only name, enabled, description, source, agent_id), then the tenant-wide custom policies, enabled or disabled, and with `agent_id` that agent's scoped ones. `mode` is the evaluation mode (`enforcement` or `shadow`), `approval_mode` the approval mode held actions are decided under. Every tier may list.",
  responses: { 200: json(s.PolicyList, 'The policies') },
});

export const testRoute = keyRoute({
  ...routeOf(testPoliciesVerb),
  path: '/v1/control/policies/test',
  tags,
  summary: 'Dry run: which rule would match where',
  description: `Evaluates the action against the current policy set (for \`agent_id\`, with its overrides) plus an optional draft \`policy\`, which replaces a policy of the same name for this test. Nothing is stored, audited or counted as an action. Every tier may test the current set; a draft needs Starter+ (403 svc_ram.v1.tier.feature_required), an agent-scoped draft Pro+. A bad draft is 400 svc_ram.v1.control.invalid_policy naming \`policy.<field>\`. Bounded as POST /v1/actions is: an action longer than ${MAX_EVALUATED_CHARS / 1024} Ki characters as evaluated is not read, custom rules may scan at most ${WORK_BUDGET_CHARS / 1024 / 1024} Mi characters and take at most ${TIME_BUDGET_MS} ms; past a budget the answer is \`pending_review\` with \`policy_result.reason\` starting "Policy evaluation budget exceeded" and \`budget_exceeded\` saying which budget ran out (null when every rule ran).`,
  responses: { 200: json(s.TestResult, 'The outcome, the policy result and each match with its JSON path'), ...errorsOf(403), ...invalid },
});

export const getRoute = keyRoute({
  operationId: 'policies.get',
  method: 'get',
  path: '/v1/control/policies/{policy_name}',
  tags,
  summary: 'One policy, with its rules under config.rules',
  description: 'With `agent_id`, the agent-scoped policy of that name. Built-ins answer their short shape.',
  request: { params: s.NameParams, query: s.ScopeQuery },
  responses: { 200: json(s.PolicyDetail, 'The policy'), ...notFound },
});

export const replaceRoute = keyRoute({
  ...routeOf(replacePolicyVerb),
  path: '/v1/control/policies/{policy_name}',
  tags,
  summary: "Replace a policy's rules and metadata",
  description: `Same fields as create (the name comes from the path); fields left out take their defaults. The version is incremented; 200 \`action: "updated"\`. The scope is \`agent_id\` from the body or the query (tenant-wide without). 404 when no policy of that name exists at that scope. Re-enabling a disabled policy needs room under the tier's limit. ${bodies}`,
  request: { params: s.NameParams, query: s.ScopeQuery, body: policyBody(s.ReplaceBody) },
  responses: { 200: json(s.PolicyWrite, 'Updated'), ...invalid, ...notFound },
});

export const deleteRoute = keyRoute({
  operationId: 'policies.delete',
  method: 'delete',
  path: '/v1/control/policies/{policy_name}',
  tags,
  summary: 'Disable a policy (soft delete)',
  description:
    'Sets `enabled` false and increments the version; 200 `action: "disabled"` (again for an already disabled policy, which is left as it is). Built-ins cannot be deleted: 403 svc_ram.v1.control.cannot_delete_builtin.',
  request: { params: s.NameParams, query: s.ScopeQuery },
  responses: {
    200: json(s.PolicyWrite, 'Disabled'),
    403: {
      description: 'A built-in policy (svc_ram.v1.control.cannot_delete_builtin)',
      content: { 'application/json': { schema: errorsOf(403)[403].content['application/json'].schema } },
    },
    ...notFound,
  },
});
