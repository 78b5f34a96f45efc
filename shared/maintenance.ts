import { sql } from 'drizzle-orm';
import type { Db } from './db';
import type { Logger } from './log';
import { DAY } from './time';

export type MaintenanceTask = (db: Db, now: Date) => Promise<number>;

/** Housekeeping every deployment runs on a schedule (cron on Workers, a timer on Node). */
export const platformMaintenance: Record<string, MaintenanceTask> = {
  expired_counters: async (db, now) => count(await db.execute(sql`DELETE FROM usage_counters WHERE expires_at < ${now.toISOString()}`)),
  old_signup_attempts: async (db, now) =>
    count(await db.execute(sql`DELETE FROM signup_attempts WHERE created_at < ${new Date(now.getTime() - 31 * DAY).toISOString()}`)),
  dead_signup_tokens: async (db, now) =>
    count(await db.execute(sql`DELETE FROM signup_tokens WHERE expires_at < ${new Date(now.getTime() - 7 * DAY).toISOString()}`)),
  finished_jobs: async (db, now) =>
    count(await db.execute(sql`DELETE FROM outbox WHERE status = 'done' AND done_at < ${new Date(now.getTime() - 7 * DAY).toISOString()}`)),
};

function count(result: unknown): number {
  const r = result as { rowCount?: number | null; affectedRows?: number };
  return Number(r.rowCount ?? r.affectedRows ?? 0);
}

export async function runMaintenance(db: Db, tasks: Record<string, MaintenanceTask>, now: Date, log: Logger) {
  const done: Record<string, number> = {};
  for (const [name, task] of Object.entries(tasks)) {
    try {
      done[name] = await task(db, now);
    } catch (err) {
      log.error('maintenance task failed', { task: name, error: err instanceof Error ? err.message : String(err) });
    }
  }
  log.debug('maintenance finished', done);
  return done;
}
