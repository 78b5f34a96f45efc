import { toUrn } from '../../shared/platform/contract/ids';
import { memorySpan } from '../../shared/platform/http/tracing';
import { defineVerb } from '../../shared/platform/http/verb';
import * as s from './schemas';
import { search } from './search';
import { get, remove } from './service';

/** The memories verbs the routes and the console share (docs/architecture.md#verbs). */
export const getMemoryVerb = defineVerb({
  name: 'memories.get',
  method: 'get',
  confinable: true,
  input: { params: s.IdParams },
  run: (ctx, params) => get(ctx, params),
});

export const searchVerb = defineVerb({
  name: 'memories.search',
  method: 'get',
  confinable: true,
  input: { query: s.SearchQuery },
  run: (ctx, query) =>
    memorySpan(
      ctx.services.config,
      'search_memory',
      { storeId: query.space_id && toUrn(query.space_id), query: query.q },
      () => search(ctx, query),
      (found) => ({ count: found.total_results }),
    ),
});

export const deleteMemoryVerb = defineVerb({
  name: 'memories.delete',
  method: 'delete',
  confinable: true,
  input: { params: s.IdParams },
  run: (ctx, params) =>
    memorySpan(
      ctx.services.config,
      'delete_memory',
      { recordId: toUrn(params.id) },
      () => remove(ctx, params),
      () => ({ count: 1 }),
    ),
});
