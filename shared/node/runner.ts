import type { Services } from '../platform/contract/services';
import { runDueJobs } from '../jobs/outbox';
import { analyzeEmbedded, runMaintenance, type MaintenanceTask } from '../jobs/maintenance';
import { errorFields } from '../platform/contract/error-fields';

/**
 * In-process job dispatcher and maintenance timer for Node. Jobs are polled every second and
 * also right after a commit that wrote some (`wake`). Several instances may run it: claims use
 * SKIP LOCKED leases.
 */
export class NodeRunner {
  private timer: NodeJS.Timeout | null = null;
  private maintenanceTimer: NodeJS.Timeout | null = null;
  private statisticsTimer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  /** Maintenance runs in progress (the periodic one, the embedded statistics, a test's own call). */
  private readonly maintaining = new Set<Promise<unknown>>();
  private again = false;
  private stopped = false;

  constructor(
    private readonly services: Services,
    private readonly maintenance: Record<string, MaintenanceTask>,
    private readonly opts: { pollMs?: number; maintenanceMs?: number; statisticsMs?: number } = {},
  ) {}

  start(): void {
    this.stopped = false; // a stopped runner may be started again (test/bench/webhooks.ts pauses it so)
    this.timer = setInterval(() => this.wake(), this.opts.pollMs ?? 1000);
    this.timer.unref();
    this.maintenanceTimer = setInterval(() => void this.maintain(), this.opts.maintenanceMs ?? 15 * 60_000);
    this.maintenanceTimer.unref();
    // Planner statistics on the embedded default, between maintenance runs (maintenance.ts).
    if (this.services.storage === 'embedded') {
      this.statisticsTimer = setInterval(
        () => void this.track(runMaintenance(this.services, { embedded_statistics: analyzeEmbedded }, this.isStopped)),
        this.opts.statisticsMs ?? 30_000,
      );
      this.statisticsTimer.unref();
    }
    void this.maintain();
  }

  wake(): void {
    void this.drain();
  }

  /**
   * Runs due jobs until none are left. A call during a run makes that run go round once more and
   * returns it, so `await drain()` always covers jobs committed before the call (tests rely on it).
   */
  drain(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        try {
          while (!this.stopped && (await runDueJobs(this.services)) > 0);
        } catch (err) {
          this.services.log.error('job dispatcher failed', errorFields(err));
        }
      } while (this.again && !this.stopped);
    })().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  maintain() {
    return this.track(runMaintenance(this.services, this.maintenance, this.isStopped));
  }

  private readonly isStopped = () => this.stopped;

  private track<T>(run: Promise<T>): Promise<T> {
    this.maintaining.add(run);
    const forget = () => this.maintaining.delete(run);
    run.then(forget, forget);
    return run;
  }

  /**
   * Stops polling and waits for the jobs and maintenance tasks in hand, so that none of them meets
   * a closed pool; the rest of a maintenance run is left for the next, the jobs stay due for
   * another instance or the next start.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.maintenanceTimer) clearInterval(this.maintenanceTimer);
    if (this.statisticsTimer) clearInterval(this.statisticsTimer);
    await Promise.allSettled([this.running, ...this.maintaining]);
  }
}
