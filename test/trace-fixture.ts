import canonicalize from 'canonicalize';
import { sql } from 'drizzle-orm';
import type { STEP_TYPES } from '../schema/traces';
import { sha256Hex } from '../shared/platform/crypto';
import { newId } from '../shared/platform/ids';
import type { TestEngine } from './harness';

export interface StepInput {
  type: (typeof STEP_TYPES)[number];
  content: string;
  metadata?: Record<string, unknown>;
  /** When the step was recorded; default the engine clock's now. */
  at?: Date;
}

/**
 * Writes a trace and its steps straight into the tables, hashed and chained as DESIGN "Traces"
 * says, until the traces API exists to write them.
 */
export async function insertTrace(engine: TestEngine, tenantId: string, agentId: string, steps: StepInput[]) {
  const traceId = newId('trace');
  const started = steps[0]?.at ?? engine.clock.now();
  let previous: string | null = null;
  const records = [];
  for (const [index, s] of steps.entries()) {
    const metadata = s.metadata ?? {};
    const integrity = await sha256Hex(canonicalize({ trace_id: traceId, step_index: index, type: s.type, content: s.content, metadata }) ?? '');
    const chain = await sha256Hex((previous ?? '') + integrity);
    records.push({
      id: newId('step'),
      step_index: index,
      type: s.type,
      content: s.content,
      metadata,
      integrity_hash: integrity,
      previous_chain_hash: previous,
      chain_hash: chain,
      created_at: (s.at ?? engine.clock.now()).toISOString(),
    });
    previous = chain;
  }
  const db = engine.node.services.db;
  await db.execute(sql`
    INSERT INTO traces (id, tenant_id, agent_id, created_at, step_count)
    VALUES (${traceId}, ${tenantId}, ${agentId}, ${started.toISOString()}, ${steps.length})`);
  if (records.length) {
    await db.execute(sql`
      INSERT INTO trace_steps (id, tenant_id, trace_id, step_index, type, content, metadata, integrity_hash, previous_chain_hash, chain_hash, created_at)
      SELECT r.id, ${tenantId}, ${traceId}, r.step_index, r.type, r.content, r.metadata, r.integrity_hash, r.previous_chain_hash, r.chain_hash, r.created_at
      FROM jsonb_to_recordset(${JSON.stringify(records)}::jsonb) AS r(id text, step_index integer, type text, content text, metadata jsonb,
        integrity_hash text, previous_chain_hash text, chain_hash text, created_at timestamptz)`);
  }
  return { traceId, stepIds: records.map((r) => r.id) };
}
