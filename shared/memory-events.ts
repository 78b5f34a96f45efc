import { sql } from 'drizzle-orm';
import type { DbOrTx } from './db';

export type MemoryEventKind = 'create' | 'update' | 'delete' | 'recall' | 'link' | 'unlink' | 'expire' | 'rollback';

export interface MemoryEventInput {
  tenantId: string;
  memoryId: string;
  kind: MemoryEventKind;
  at: Date;
  actor?: string | null;
  requestId?: string | null;
  before?: Record<string, unknown> | null;
  after?: Record<string, unknown> | null;
  /** Embedding of the `after` state, so a past state can be restored or searched as it was. */
  embedding?: number[] | null;
  metadata?: Record<string, unknown>;
}

/** Appends to the memory event log inside the caller's transaction (the history replay and rollback read). */
export async function recordMemoryEvents(tx: DbOrTx, events: MemoryEventInput[]): Promise<void> {
  for (const e of events) {
    await tx.execute(sql`
      INSERT INTO memory_events (tenant_id, memory_id, kind, at, actor, request_id, before, after, embedding, metadata)
      VALUES (${e.tenantId}, ${e.memoryId}::uuid, ${e.kind}, ${e.at.toISOString()}, ${e.actor ?? null}, ${e.requestId ?? null},
              ${e.before ? JSON.stringify(e.before) : null}::jsonb, ${e.after ? JSON.stringify(e.after) : null}::jsonb,
              ${e.embedding ? `[${e.embedding.join(',')}]` : null}::vector, ${JSON.stringify(e.metadata ?? {})}::jsonb)`);
  }
}
