import type { Server } from 'node:http';
import type { Services } from '../platform/services';

interface Closable {
  services: Services;
  /** Ends event streams, lets the job runner finish the job in hand, closes pools. */
  close(): Promise<void>;
}

/**
 * A graceful stop (docs/operations.md#shutdown): stop accepting connections, end the live event
 * streams (they would hold their connections forever), let the requests in flight finish within
 * `graceMs` while idle keep-alive connections are closed as they become idle (so no new request
 * starts on them), then close what is left, let the job runner finish the job in hand and close
 * the pools. Resolves when all of it is done.
 */
export async function gracefulStop(server: Server, node: Closable, graceMs: number): Promise<{ forced: boolean }> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  await node.services.eventBus?.close();
  server.closeIdleConnections();
  // A keep-alive connection whose request just finished is idle now: close it before it takes another.
  const sweep = setInterval(() => server.closeIdleConnections(), 50);
  let forced = false;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      forced = true;
      resolve();
    }, graceMs);
  });
  await Promise.race([closed, deadline]);
  clearInterval(sweep);
  clearTimeout(timer);
  if (forced) {
    server.closeAllConnections();
    await closed;
  }
  await node.close();
  return { forced };
}
