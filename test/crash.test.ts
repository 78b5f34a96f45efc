import { describe, expect, it } from 'vitest';
import { runCrashTest } from './crash/crash';
import { integration, storageName } from './harness';

/**
 * One small round of the crash test (test/crash/crash.ts; `npm run crash` runs more): the real
 * server as a child process, 32 concurrent writers, kill -9 under load, a restart on the same data;
 * every acknowledged write is there, the audit chain verifies, the counters are exact.
 */
describe(`crash (${storageName})`, () => {
  it('kill -9 under load loses no acknowledged write; audit chain and counters survive', async () => {
    const lines: string[] = [];
    const report = await runCrashTest({
      rounds: 1,
      writers: 32,
      tenants: 4,
      killAfterMs: 1_500,
      databaseUrl: integration.databaseUrl,
      redisUrl: integration.redisUrl,
      log: (line) => lines.push(line),
    });
    console.log(lines.join('\n'));
    const [round] = report.rounds;
    expect(round.acknowledged, lines.join('\n')).toBeGreaterThan(0);
    expect(round.problems, lines.join('\n')).toEqual([]);
    expect(report.lost).toBe(0);
    expect(report.ok).toBe(true);
  }, 120_000);
});
