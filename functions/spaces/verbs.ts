import { defineVerb } from '../../shared/platform/http/verb';
import * as s from './schemas';
import { createSpace } from './service';

/** Create a context space: the route and the importer's `space` lines (docs/architecture.md#verbs). */
export const createSpaceVerb = defineVerb({
  name: 'spaces.create',
  method: 'post',
  confinable: true,
  input: { body: s.CreateSpaceBody },
  run: (ctx, body) => createSpace(ctx, body),
});
