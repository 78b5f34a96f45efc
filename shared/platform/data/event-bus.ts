/**
 * This process's wake-up line for live event streams (`GET /v1/events/stream`,
 * docs/architecture.md#live-events). The unit of work publishes the tenants a commit stored events for, right after the
 * commit; a stream of one of those tenants then reads the events table at once instead of at its
 * next poll. It carries no events, only "look now": the table stays the one source, so a wake
 * that is lost (another instance wrote, or this is Workers, where every request has its own
 * services) costs at most one poll interval, never an event.
 */
export interface StreamListener {
  /** New events may have committed for the tenant. */
  wake(): void;
  /** The process is shutting down: end the stream. */
  close(): void;
}

export class EventBus {
  private readonly byTenant = new Map<string, Set<StreamListener>>();
  private count = 0;
  private closing = false;
  private drained: (() => void) | null = null;

  /** After a commit that stored events for these tenants. */
  publish(tenantIds: Iterable<string>): void {
    for (const tenantId of tenantIds) {
      const listeners = this.byTenant.get(tenantId);
      if (!listeners) continue;
      for (const l of [...listeners]) l.wake();
    }
  }

  /**
   * Registers a stream of `tenantId`; the returned function unregisters it, and `close` waits for
   * that, so a stream unsubscribes only once its own clean-up (its lease) is done.
   */
  subscribe(tenantId: string, listener: StreamListener): () => void {
    let listeners = this.byTenant.get(tenantId);
    if (!listeners) this.byTenant.set(tenantId, (listeners = new Set()));
    listeners.add(listener);
    this.count += 1;
    if (this.closing) queueMicrotask(() => listener.close());
    let done = false;
    return () => {
      if (done) return;
      done = true;
      listeners.delete(listener);
      if (!listeners.size && this.byTenant.get(tenantId) === listeners) this.byTenant.delete(tenantId);
      this.count -= 1;
      if (this.count === 0) this.drained?.();
    };
  }

  /** Open streams in this process. */
  get size(): number {
    return this.count;
  }

  /** Shutdown: asks every stream to end and waits (at most `timeoutMs`) until all have unsubscribed. */
  async close(timeoutMs = 5_000): Promise<void> {
    this.closing = true;
    if (this.count === 0) return;
    const all = new Promise<void>((resolve) => (this.drained = resolve));
    for (const listeners of this.byTenant.values()) for (const l of [...listeners]) l.close();
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([all, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(timer);
  }
}
