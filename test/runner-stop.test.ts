import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { NodeRunner } from '../shared/node/runner';
import { createEngine, type TestEngine } from './harness';

/**
 * A process that stops while its maintenance runs (at start, a run begins at once) lets the task in
 * hand finish before its pools close, and begins no other: a task that met a closed pool failed,
 * and every task after it was logged as failed at each such stop.
 */
let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const HOUR = 3_600_000;

describe('the job runner stopping', () => {
  it('waits for the maintenance task in hand and begins no other', async () => {
    let release: () => void = () => undefined;
    const began: string[] = [];
    const tasks = {
      first: async () => {
        began.push('first');
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        return 1;
      },
      second: async () => {
        began.push('second');
        return 1;
      },
    };
    const runner = new NodeRunner(engine.node.services, tasks, { pollMs: HOUR, maintenanceMs: HOUR, statisticsMs: HOUR });
    runner.start();
    await vi.waitFor(() => expect(began).toEqual(['first']));
    let stopped = false;
    const stopping = runner.stop().then(() => {
      stopped = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(began).toEqual(['first']);
  });

  it('runs its maintenance again once started after a stop', async () => {
    const began: string[] = [];
    const runner = new NodeRunner(engine.node.services, { only: async () => began.push('only') }, { pollMs: HOUR, maintenanceMs: HOUR, statisticsMs: HOUR });
    runner.start();
    await runner.stop();
    runner.start(); // a start runs the maintenance at once
    await runner.maintain();
    await runner.stop();
    expect(began).toEqual(['only', 'only', 'only']);
  });
});
