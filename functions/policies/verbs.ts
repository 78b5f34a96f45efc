import { defineVerb } from '../../shared/platform/verb';
import { policyValidationHook } from './body';
import * as s from './schemas';
import { listPolicies, testPolicies } from './service';

/** The policies verbs the routes and the console share (docs/architecture.md#verbs). */
export const listPoliciesVerb = defineVerb({
  name: 'policies.list',
  method: 'get',
  input: { query: s.ListQuery },
  run: (ctx, query) => listPolicies(ctx, query),
});

/** The dry run: a bad draft `policy` is refused as an invalid policy, the rest as any input. */
export const testPoliciesVerb = defineVerb({
  name: 'policies.test',
  method: 'post',
  input: { body: s.TestBody },
  hook: policyValidationHook('policy'),
  run: (ctx, body) => testPolicies(ctx, body),
});
