import canonicalize from 'canonicalize';
import { sql } from 'drizzle-orm';
import { auditLog } from '../../schema';
import { sha256Hex } from './crypto';
import { type DbOrTx, rows } from './db';
import { newId } from './ids';

export interface AuditInput {
  tenantId: string;
  operation: string;
  resourceType: string;
  resourceId?: string | null;
  /** Key id (or `admin`, `system`) that caused the entry. */
  actor?: string | null;
  requestId?: string | null;
  metadata?: Record<string, unknown>;
  at: Date;
}

/** The fields a chain hash covers, in a form anyone can recompute from an exported entry. */
export function auditHashInput(e: {
  id: string;
  tenant_id: string;
  seq: number;
  created_at: string;
  operation: string;
  resource_type: string;
  resource_id: string | null;
  actor: string | null;
  metadata: Record<string, unknown>;
}): string {
  return canonicalize(e) ?? '';
}

export const chainHash = (prevHash: string, canonicalEntry: string) => sha256Hex(prevHash + canonicalEntry);

/**
 * Appends to the tenant's hash chain inside the caller's transaction: if this insert fails, the
 * change it records fails too. The head row lock serializes appends per tenant, keeping seq gapless.
 */
export async function appendAudit(tx: DbOrTx, input: AuditInput): Promise<{ id: string; seq: number; hash: string }> {
  await tx.execute(sql`INSERT INTO audit_heads (tenant_id) VALUES (${input.tenantId}) ON CONFLICT DO NOTHING`);
  const [head] = await rows<{ seq: string | number; hash: string }>(
    tx,
    sql`SELECT seq, hash FROM audit_heads WHERE tenant_id = ${input.tenantId} FOR UPDATE`,
  );
  const seq = Number(head.seq) + 1;
  const entry = {
    id: newId('audit'),
    tenant_id: input.tenantId,
    seq,
    created_at: input.at.toISOString(),
    operation: input.operation,
    resource_type: input.resourceType,
    resource_id: input.resourceId ?? null,
    actor: input.actor ?? null,
    metadata: input.metadata ?? {},
  };
  const hash = await chainHash(head.hash, auditHashInput(entry));
  await tx.insert(auditLog).values({
    tenantId: input.tenantId,
    seq,
    id: entry.id,
    createdAt: input.at,
    operation: entry.operation,
    resourceType: entry.resource_type,
    resourceId: entry.resource_id,
    actor: entry.actor,
    requestId: input.requestId ?? null,
    metadata: entry.metadata,
    prevHash: head.hash,
    entryHash: hash,
  });
  await tx.execute(sql`UPDATE audit_heads SET seq = ${seq}, hash = ${hash} WHERE tenant_id = ${input.tenantId}`);
  return { id: entry.id, seq, hash };
}
