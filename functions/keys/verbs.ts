import { restrictedKeyLimit } from '../../shared/platform/data/restricted-keys';
import { defineVerb } from '../../shared/platform/http/verb';
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
  limit: restrictedKeyLimit,
  run: (ctx, body) => createRestricted(ctx, body),
});
