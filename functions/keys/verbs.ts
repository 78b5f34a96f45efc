import { defineVerb } from '../../shared/platform/http/verb';
import * as q from './queries';
import * as s from './schemas';
import { admitRestricted, createRestricted } from './service';

/**
 * Mint a restricted key (docs/architecture.md#verbs): at most MAX_RESTRICTED_KEYS live at once per
 * account, counted under the account's restricted-keys lock, so two concurrent mints cannot both
 * take the last place.
 */
export const createRestrictedVerb = defineVerb({
  name: 'keys.createRestricted',
  method: 'post',
  input: { body: s.RestrictedKeyBody },
  check: (ctx, body) => admitRestricted(ctx, body),
  limit: {
    metric: 'restricted_keys',
    max: () => s.MAX_RESTRICTED_KEYS,
    lock: (ctx) => `restricted-keys:${ctx.tenantId}`,
    count: (tx, ctx) => q.countLiveRestricted(tx, ctx.tenantId, ctx.now),
    message: (max) => `At most ${max} live restricted keys per account; revoke one first`,
  },
  run: (ctx, body) => createRestricted(ctx, body),
});
