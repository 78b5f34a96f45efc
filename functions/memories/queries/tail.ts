import { type SQL } from 'drizzle-orm';
import { sql } from '../../../shared/platform/data/db';
import type { MemoryDto } from '../../../shared/memory/rows';
import { type DbOrTx, preparedRows } from '../../../shared/platform/data/db';
import { milestoneInsert } from '../../../shared/platform/data/milestones';
import { auditRow, chainSql, type AuditInput } from '../../../shared/platform/data/audit';
import { enqueueDelivery, type EventPayload, streamEventsSql } from '../../../shared/jobs/events';
import { liveMemoriesSql, markUsageChanged, quotaUpsertSql } from '../../../shared/platform/data/usage';
import { ANOMALY_THRESHOLDS, anomalyCounterSql } from '../../../shared/platform/data/anomalies';
import { tiers } from '../../../shared/platform/contract/tiers';
import type { Tier } from '../../../shared/platform/contract/tiers';

const RAPID_WRITES = ANOMALY_THRESHOLDS.rapid_writes;

/** The per-tenant rows of a store, for one owner. */
export interface StoreTail {
  owner: string;
  tier: Tier;
  audits: AuditInput[];
  /** Memories created or changed (create and update events): the anomaly window's count. */
  rapidWrites: number;
  /** The stream events, as stored (their ids name the webhook deliveries enqueued before the tail). */
  events: EventPayload[];
}

/**
 * Last statement of a store: per owner, the memories quota (counted with its ceiling), the live
 * count, the audit entries on the chain head, the stream events with their seqs from the same head
 * update, and the first_memory milestone. A quota ceiling passed since the probe read it raises
 * 40001 (the store runs again). `last`: run as the transaction's last statement (`work.lastStatement`).
 * Answers the anomaly window's count per owner.
 */
export async function storeTail(
  tx: DbOrTx,
  tails: StoreTail[],
  now: Date,
  last?: <T>(build: (commitsWithIt: boolean) => SQL) => Promise<T[]>,
): Promise<{ rapidWrites: Map<string, number> } | null> {
  const ctes: SQL[] = [];
  const cols: SQL[] = [];
  const checks: SQL[] = [];
  const crossings: SQL[] = [];
  const ordered = [...tails].sort((a, b) => (a.owner < b.owner ? -1 : 1));
  for (const [i, t] of ordered.entries()) {
    const n = `t${i}`;
    const head = sql.raw(`${n}_head`);
    const count = t.audits.length;
    const limit = tiers[t.tier].limits.memories;
    // The chain head first; the counters read from it, so they are locked after it, in the order
    // every other write takes them (head, then counters): no deadlock with a concurrent update.
    ctes.push(...chainSql(n, t.owner, t.audits.map(auditRow), t.events.length));
    ctes.push(streamEventsSql(n, t.owner, `${n}_head`, t.events));
    ctes.push(sql`${sql.raw(n)}_quota AS (${quotaUpsertSql(t.owner, 'memories', now, count, limit, head)})`);
    ctes.push(sql`${sql.raw(n)}_live AS (${liveMemoriesSql(t.owner, count, head)})`);
    ctes.push(sql`${sql.raw(n)}_rapid AS (${anomalyCounterSql(t.owner, 'rapid_writes', now, t.rapidWrites, head)})`);
    ctes.push(sql`${sql.raw(n)}_milestone AS (${milestoneInsert(t.owner, 'first_memory', now, { memory_id: (t.events[0].data.memory as MemoryDto).uuid })})`);
    checks.push(sql`(SELECT count(*) FROM ${sql.raw(n)}_quota) > 0`);
    cols.push(sql`(SELECT value FROM ${sql.raw(n)}_rapid) AS ${sql.raw(n)}_rapid`);
    const rapid = sql`(SELECT value FROM ${sql.raw(n)}_rapid)`;
    crossings.push(sql`(${rapid} - ${t.rapidWrites}::bigint < ${RAPID_WRITES}::bigint AND ${rapid} >= ${RAPID_WRITES}::bigint)`);
  }
  // A quota ceiling passed since the probe: the store runs again from the new count. A statement
  // that commits with it cannot leave the anomaly its count reached to the caller: that store runs
  // again without committing with it, and records the anomaly in its transaction.
  const statement = (commitsWithIt: boolean) => sql`WITH RECURSIVE ${sql.join(ctes, sql`, `)}
    SELECT CASE WHEN NOT (${sql.join(checks, sql` AND `)}) THEN engram_retry('memory quota moved while storing')
                WHEN ${commitsWithIt}::boolean AND (${sql.join(crossings, sql` OR `)}) THEN engram_retry('an anomaly threshold was reached')
                ELSE true END AS ok,
           ${sql.join(cols, sql`, `)}`;
  const [row] = last ? await last<Record<string, unknown>>(statement) : await preparedRows<Record<string, unknown>>(tx, statement(false));
  if (!row.ok) return null;
  for (const t of ordered) markUsageChanged(tx, t.owner);
  return { rapidWrites: new Map(ordered.map((t, i) => [t.owner, Number(row[`t${i}_rapid`])])) };
}

export const enqueueWebhookDelivery = enqueueDelivery;
