import { z } from '@hono/zod-openapi';
import { defineVerb } from '../../shared/platform/http/verb';
import * as s from './schemas';
import { createAgent, createCapability, restoreAgent, restoreCapability } from './service';

/** The runtime verbs the routes and the importer share (docs/architecture.md#verbs). */
export const createCapabilityVerb = defineVerb({
  name: 'runtime.createCapability',
  method: 'post',
  input: { body: s.CapabilityBody },
  run: (ctx, body) => createCapability(ctx, body),
});

/** A bundle's `pack` line: the create verb's rules; a pack of that name is kept (null). */
export const restoreCapabilityVerb = defineVerb({
  name: 'runtime.createCapability',
  method: 'post',
  input: { body: s.CapabilityBody },
  run: (ctx, body) => restoreCapability(ctx, body),
});

export const createAgentVerb = defineVerb({
  name: 'runtime.createAgent',
  method: 'post',
  input: { body: s.AgentBody },
  run: (ctx, body) => createAgent(ctx, body),
});

/** A bundle's `agent` line: the create verb's rules, with the status it was exported in; an agent of that id is kept (null). */
export const restoreAgentVerb = defineVerb({
  name: 'runtime.createAgent',
  method: 'post',
  input: { body: s.AgentBody.extend({ status: z.unknown().optional() }) },
  run: (ctx, body) => restoreAgent(ctx, body),
});
