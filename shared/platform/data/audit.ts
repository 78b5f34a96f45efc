import canonicalize from 'canonicalize';
import { type SQL } from 'drizzle-orm';
import { sql } from './db';
import { sha256Hex } from '../contract/crypto';
import { type DbOrTx, rows, rowsOf } from './db';
import { newId } from '../contract/ids';

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
  // The JCS text of the entry (RFC 8785, what `canonicalize` gives), its fixed keys written in their
  // sorted order: verify computes this for every entry, and sorting the keys was most of its cost.
  return (
    `{"actor":${j(e.actor)},"created_at":${j(e.created_at)},"id":${j(e.id)},"metadata":${canonicalJson(e.metadata)},` +
    `"operation":${j(e.operation)},"resource_id":${j(e.resource_id)},"resource_type":${j(e.resource_type)},"seq":${j(e.seq)},"tenant_id":${j(e.tenant_id)}}`
  );
}

const j = (v: string | number | null) => (typeof v === 'string' ? jsonString(v) : JSON.stringify(v));

/** A string as JCS writes it; one with a lone surrogate is refused, as `canonicalize` refuses it. */
const jsonString = (v: string) => ((v as string & { isWellFormed?: () => boolean }).isWellFormed?.() === false ? (canonicalize(v) ?? '') : JSON.stringify(v));

/**
 * RFC 8785 canonical JSON of a plain JSON value (as JSON.parse returns it): keys sorted by UTF-16
 * code units, strings and numbers as JSON.stringify writes them, no whitespace. Anything else
 * (undefined members, toJSON, ...) goes to the `canonicalize` library, which defines the result.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'string') return jsonString(value);
    return typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value)) ? JSON.stringify(value) : (canonicalize(value) ?? '');
  }
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      const v = value[i];
      out += (i ? ',' : '') + (v === undefined || typeof v === 'function' ? 'null' : canonicalJson(v));
    }
    return `${out}]`;
  }
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return canonicalize(value) ?? '';
  const keys = Object.keys(value).sort();
  let out = '{';
  let first = true;
  for (const k of keys) {
    const v = (value as Record<string, unknown>)[k];
    if (v === undefined || typeof v === 'function') continue;
    out += `${(first ? '' : ',') + jsonString(k)}:${canonicalJson(v)}`;
    first = false;
  }
  return `${out}}`;
}

export const chainHash = (prevHash: string, canonicalEntry: string) => sha256Hex(prevHash + canonicalEntry);

/** A seq no chain reaches, put where the seq goes so the canonical text can be cut around it. */
const SEQ_MARK = Number.MAX_SAFE_INTEGER;
const TAIL_KEY = ',"tenant_id":';

/**
 * The canonical text of an entry cut around its seq (JCS orders the keys, so `seq` comes just
 * before `tenant_id`, the last key, whose value is a string: the last `,"seq":<mark>,"tenant_id":`
 * is the entry's own). SQL joins the pieces once the seq is known under the head's lock.
 */
function canonicalAroundSeq(entry: Omit<Parameters<typeof auditHashInput>[0], 'seq'>): [string, string] {
  const text = auditHashInput({ ...entry, seq: SEQ_MARK });
  const at = text.lastIndexOf(`,"seq":${SEQ_MARK}${TAIL_KEY}`);
  return [`${text.slice(0, at)},"seq":`, text.slice(at + `,"seq":${SEQ_MARK}`.length)];
}

/** What `chainSql` appends for one entry, computed before any lock is taken. */
export function auditRow(input: AuditInput) {
  const id = newId('audit');
  const createdAt = input.at.toISOString();
  const metadata = input.metadata ?? {};
  const [pre, suf] = canonicalAroundSeq({
    id,
    tenant_id: input.tenantId,
    created_at: createdAt,
    operation: input.operation,
    resource_type: input.resourceType,
    resource_id: input.resourceId ?? null,
    actor: input.actor ?? null,
    metadata,
  });
  return {
    id,
    pre,
    suf,
    created_at: createdAt,
    operation: input.operation,
    resource_type: input.resourceType,
    resource_id: input.resourceId ?? null,
    actor: input.actor ?? null,
    request_id: input.requestId ?? null,
    metadata,
  };
}
export type AuditRow = ReturnType<typeof auditRow>;

/**
 * CTEs (for a `WITH RECURSIVE` statement) that append `entries` to one tenant's chain: the head row
 * is locked, each entry's hash is `sha256(prev_hash || canonical entry)` computed by Postgres
 * (`sha256` over the UTF-8 bytes, the same digest as `chainHash`), the entries are inserted and the
 * head moves to the last one; `eventCount` stream seqs are taken from the head in the same update.
 * The head lock is taken in the statement that writes, so it is held from there to commit only.
 * CTE names start with `name`: `<name>_log` (seq, id, entry_hash of the new entries) and
 * `<name>_head` (the head's new `event_seq`) can be read by the rest of the statement.
 */
export function chainSql(name: string, tenantId: string, entries: AuditRow[], eventCount = 0): SQL[] {
  const n = sql.raw(name);
  return [
    sql`${n}_locked AS (SELECT seq, hash FROM audit_heads WHERE tenant_id = ${tenantId} FOR UPDATE)`,
    sql`${n}_in AS (SELECT x.ord::int AS n, x.e FROM jsonb_array_elements(${JSON.stringify(entries)}::jsonb) WITH ORDINALITY AS x(e, ord))`,
    sql`${n}_chain (n, seq, prev, hash) AS (
          SELECT 0, h.seq, ''::text, h.hash FROM ${n}_locked h
          UNION ALL
          SELECT c.n + 1, c.seq + 1, c.hash, encode(sha256(convert_to(c.hash || (i.e->>'pre') || (c.seq + 1)::text || (i.e->>'suf'), 'UTF8')), 'hex')
          FROM ${n}_chain c JOIN ${n}_in i ON i.n = c.n + 1)`,
    sql`${n}_log AS (
          INSERT INTO audit_log (tenant_id, seq, id, created_at, operation, resource_type, resource_id, actor, request_id, metadata, prev_hash, entry_hash)
          SELECT ${tenantId}, c.seq, i.e->>'id', (i.e->>'created_at')::timestamptz, i.e->>'operation', i.e->>'resource_type', i.e->>'resource_id',
                 i.e->>'actor', i.e->>'request_id', i.e->'metadata', c.prev, c.hash
          FROM ${n}_chain c JOIN ${n}_in i ON i.n = c.n
          RETURNING seq, id, entry_hash)`,
    sql`${n}_head AS (
          UPDATE audit_heads h SET seq = l.seq, hash = l.hash, event_seq = h.event_seq + ${eventCount}
          FROM (SELECT seq, hash FROM ${n}_chain ORDER BY n DESC LIMIT 1) l
          WHERE h.tenant_id = ${tenantId}
          RETURNING h.event_seq)`,
  ];
}

/**
 * Makes sure the tenants have a chain head row: a no-op without waits when they do. The NOT EXISTS
 * matters: a bare INSERT ... ON CONFLICT DO NOTHING waits for any transaction that has updated the
 * existing row to end, so every write of a tenant would queue at its first statement behind the
 * write holding the head (from its append to its commit), not only at its own append.
 */
export const ensureHeadsSql = (tenantIds: string[]) =>
  sql`INSERT INTO audit_heads (tenant_id)
      SELECT t FROM ${rowsOf(tenantIds, 'text', 't')} WHERE NOT EXISTS (SELECT 1 FROM audit_heads h WHERE h.tenant_id = t)
      ON CONFLICT DO NOTHING`;

/**
 * Appends to the tenant's hash chain inside the caller's transaction: if this insert fails, the
 * change it records fails too. The head row lock serializes appends per tenant, keeping seq gapless.
 * One statement (`chainSql`); a tenant without a head row yet gets one first.
 */
export async function appendAudit(tx: DbOrTx, input: AuditInput): Promise<{ id: string; seq: number; hash: string }> {
  const row = auditRow(input);
  const statement = sql`WITH RECURSIVE ${sql.join(chainSql('a', input.tenantId, [row]), sql`, `)}
                        SELECT seq, entry_hash FROM a_log`;
  let [appended] = await rows<{ seq: string | number; entry_hash: string }>(tx, statement);
  if (!appended) {
    await tx.execute(ensureHeadsSql([input.tenantId]));
    [appended] = await rows<{ seq: string | number; entry_hash: string }>(tx, statement);
  }
  return { id: row.id, seq: Number(appended.seq), hash: appended.entry_hash };
}
