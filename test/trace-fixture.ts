import { expect } from 'vitest';
import type { STEP_TYPES } from '../schema/traces';
import type { Tenant, TestEngine } from './harness';

export interface StepInput {
  type: (typeof STEP_TYPES)[number];
  content: string;
  metadata?: Record<string, unknown>;
  /** When the step is recorded; default the engine clock's now. */
  at?: Date;
}

/**
 * Records a trace through the traces API (the tenant must have the feature), each step with the
 * engine clock set to its `at`; the clock is put back afterwards. The trace stays active.
 */
export async function insertTrace(engine: TestEngine, tenant: Tenant, agentId: string, steps: StepInput[]) {
  const post = async <P extends string>(path: P, body: unknown) => {
    const res = await engine.request('POST', path, { key: tenant.key, body });
    expect(res.status, res.text).toBe(201);
    return res.body;
  };
  const now = engine.clock.now();
  try {
    engine.clock.set(steps[0]?.at ?? now);
    const { trace_id: traceId } = await post('/v1/traces', { agent_id: agentId });
    const stepIds: string[] = [];
    for (const s of steps) {
      engine.clock.set(s.at ?? now);
      stepIds.push((await post(`/v1/traces/${traceId}/steps`, { type: s.type, content: s.content, metadata: s.metadata })).step_id);
    }
    return { traceId: traceId as string, stepIds };
  } finally {
    engine.clock.set(now);
  }
}
