import { sql } from 'drizzle-orm';
import { type Ctx, systemCtx } from '../platform/contract/context';
import type { Services } from '../platform/contract/services';
import { DAY } from '../platform/contract/time';
import { errorFields } from '../platform/contract/error-fields';
import { rows } from '../platform/data/db';

/** One housekeeping task: runs as the `system` actor at the schedule's time; returns how much it did. */
export type MaintenanceTask = (ctx: Ctx) => Promise<number>;

/** Housekeeping every deployment runs on a schedule (cron on Workers, a timer on Node). */
export const platformMaintenance: Record<string, MaintenanceTask> = {
  expired_counters: async ({ db, now }) => count(await db.execute(sql`DELETE FROM usage_counters WHERE expires_at < ${now.toISOString()}`)),
  old_signup_attempts: async ({ db, now }) =>
    count(await db.execute(sql`DELETE FROM signup_attempts WHERE created_at < ${new Date(now.getTime() - 31 * DAY).toISOString()}`)),
  dead_signup_tokens: async ({ db, now }) =>
    count(await db.execute(sql`DELETE FROM signup_tokens WHERE expires_at < ${new Date(now.getTime() - 7 * DAY).toISOString()}`)),
  // Idempotency-Key records (shared/platform/data/idempotency.ts) past their 24 hours.
  idempotency_keys: async ({ db, now }) => count(await db.execute(sql`DELETE FROM idempotency_keys WHERE expires_at < ${now.toISOString()}`)),
  // Events (webhook payloads, the live stream's backlog) are kept 30 days; a stream resuming from
  // an older Last-Event-ID starts at the oldest kept.
  old_events: async ({ db, now }) => count(await db.execute(sql`DELETE FROM events WHERE created_at < ${new Date(now.getTime() - 30 * DAY).toISOString()}`)),
  finished_jobs: async ({ db, now }) =>
    count(await db.execute(sql`DELETE FROM outbox WHERE status = 'done' AND done_at < ${new Date(now.getTime() - 7 * DAY).toISOString()}`)),
  embedded_statistics: analyzeEmbedded,
};

/**
 * PGlite runs as one standalone backend, without autovacuum: its tables would never be analyzed,
 * and the planner would plan every statement from page counts alone. On the embedded default this
 * does autovacuum's ANALYZE: each table whose rows changed since its last analyze by more than
 * autovacuum's threshold (50 rows + its scale factor, the table's own or the server's, × its rows)
 * is analyzed. ANALYZE reads a bounded sample (30,000 rows at the default statistics target), so it
 * holds the database briefly. The Node runner also runs it every half minute on its own, as
 * autovacuum's naptime would: a store growing fast would otherwise be planned from the statistics of
 * a much smaller table for up to a maintenance period (each auto-linking store's nearest-neighbour
 * query falls back to an exact scan that grows with the tenant). Not VACUUM: one that reaches the HNSW index holds the single-threaded
 * database for seconds, while page pruning frees the space of dead rows anyway.
 */
export async function analyzeEmbedded({ db, services }: Ctx): Promise<number> {
  if (services.storage !== 'embedded') return 0; // Postgres has autovacuum
  // A backend publishes its change counts at most once a second; without this the last second's
  // changes would not be counted until the next run.
  await db.execute(sql`SELECT pg_stat_force_next_flush()`);
  const due = await rows<{ name: string }>(
    db,
    sql`SELECT quote_ident(s.schemaname) || '.' || quote_ident(s.relname) AS name
        FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
        WHERE s.n_mod_since_analyze > 50 + greatest(c.reltuples, 0) * coalesce(
          (SELECT o.option_value::float8 FROM pg_options_to_table(c.reloptions) o WHERE o.option_name = 'autovacuum_analyze_scale_factor'),
          current_setting('autovacuum_analyze_scale_factor')::float8)
        ORDER BY s.relname`,
  );
  for (const t of due) await db.execute(sql.raw(`ANALYZE ${t.name}`));
  return due.length;
}

function count(result: unknown): number {
  const r = result as { rowCount?: number | null; affectedRows?: number };
  return Number(r.rowCount ?? r.affectedRows ?? 0);
}

/**
 * Runs every task once at one moment; a failing task is logged and does not stop the others. Once
 * `stopping` says so (the process is stopping), the tasks not begun are left for the next run.
 */
export async function runMaintenance(services: Services, tasks: Record<string, MaintenanceTask>, stopping: () => boolean = () => false) {
  const ctx = systemCtx(services);
  const log = services.log;
  const done: Record<string, number> = {};
  for (const [name, task] of Object.entries(tasks)) {
    if (stopping()) break;
    try {
      done[name] = await task(ctx);
    } catch (err) {
      log.error('maintenance task failed', { task: name, ...errorFields(err) });
    }
  }
  log.debug('maintenance finished', done);
  return done;
}
