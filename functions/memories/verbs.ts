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
  run: (ctx, query) => search(ctx, query),
});

export const deleteMemoryVerb = defineVerb({
  name: 'memories.delete',
  method: 'delete',
  confinable: true,
  input: { params: s.IdParams },
  run: (ctx, params) => remove(ctx, params),
});
