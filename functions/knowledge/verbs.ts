import { defineVerb } from '../../shared/platform/http/verb';
import * as s from './schemas';
import { createTriple } from './service';

/** Add a triple: the route and the importer's `triple` lines (docs/architecture.md#verbs). */
export const createTripleVerb = defineVerb({
  name: 'knowledge.createTriple',
  method: 'post',
  feature: 'knowledge_graph',
  input: { body: s.CreateTripleBody },
  run: (ctx, body) => createTriple(ctx, body),
});
