import { defineVerb } from '../../shared/platform/http/verb';
import { lifecycle } from './lifecycle';
import * as s from './schemas';
import { diff } from './service';

/** The replay verbs the routes and the console share (docs/architecture.md#verbs). */
export const diffVerb = defineVerb({
  name: 'replay.diff',
  method: 'get',
  feature: 'replay',
  input: { query: s.DiffQuery },
  run: (ctx, query) => diff(ctx, query),
});

export const lifecycleVerb = defineVerb({
  name: 'replay.memory',
  method: 'get',
  feature: 'replay',
  input: { params: s.MemoryParams },
  run: (ctx, { memory_id }) => lifecycle(ctx, { memoryId: memory_id }),
});
