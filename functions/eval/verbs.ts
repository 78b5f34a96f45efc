import { defineVerb } from '../../shared/platform/http/verb';
import * as q from './queries';
import * as s from './schemas';
import { createBaseline, EVAL_LIMITS } from './service';

/**
 * Add a recall baseline (docs/architecture.md#verbs): the tier's cap is counted under the
 * baselines lock; a count cap, but the contract names 429 RATE_LIMITED for it.
 */
export const createBaselineVerb = defineVerb({
  name: 'eval.createBaseline',
  method: 'post',
  input: { body: s.BaselineBody },
  limit: {
    metric: 'eval_baselines',
    max: (tier) => EVAL_LIMITS[tier].baselines,
    lock: (ctx) => `eval-baselines:${ctx.tenantId}`,
    count: (tx, ctx) => q.countBaselines(tx, ctx.tenantId),
    message: (max, tier) => `Baseline limit of ${max} reached on the ${tier} tier`,
    code: 'RATE_LIMITED',
  },
  run: (ctx, body) => createBaseline(ctx, body),
});
