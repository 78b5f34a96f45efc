import type { Server, ServerResponse } from 'node:http';
import { Server as NetServer } from 'node:net';
import type { Services } from '../platform/contract/services';

interface Closable {
  services: Services;
  /** Ends event streams, lets the job runner finish the job in hand, closes pools. */
  close(): Promise<void>;
}

/** How long a connection accepted just before the stop has to deliver its request before it counts as idle. */
const ARRIVAL_MS = 1_000;

/** Responses not yet finished, so a stop can make each the last on its connection. */
const unfinished = new WeakMap<Server, Set<ServerResponse>>();

/** Tracks the server's responses in flight (call once, when it starts listening). */
export function trackResponses(server: Server): void {
  const open = new Set<ServerResponse>();
  unfinished.set(server, open);
  server.on('request', (_req, res: ServerResponse) => {
    open.add(res);
    res.once('close', () => open.delete(res));
  });
}

/**
 * A graceful stop (docs/operations.md#shutdown): stop accepting connections, end the live event
 * streams (they would hold their connections forever), make every response from now on the last on
 * its connection (`Connection: close`, so no client sends another request into a closing socket),
 * let the requests in flight finish within `graceMs`, and close idle connections once a connection
 * accepted just before the stop has had time to deliver its request. Then close what is left, let
 * the job runner finish the job in hand and close the pools. Resolves when all of it is done.
 */
export async function gracefulStop(server: Server, node: Closable, graceMs: number): Promise<{ forced: boolean }> {
  // net.Server's close stops listening without http.Server's immediate sweep of idle connections,
  // which would reset a connection whose request is still on its way.
  const closed = new Promise<void>((resolve) => NetServer.prototype.close.call(server, () => resolve()));
  for (const res of unfinished.get(server) ?? []) if (!res.headersSent) res.shouldKeepAlive = false;
  // Before the app's own listener, which may answer at once.
  server.prependListener('request', (_req, res: ServerResponse) => {
    res.shouldKeepAlive = false;
  });
  await node.services.eventBus?.close();
  let sweep: NodeJS.Timeout | undefined;
  // Timers run before the loop reads its sockets: after a busy stretch, a request already in a
  // socket would still look idle. setImmediate sweeps after the read, when its parse has begun.
  const closeIdle = () => setImmediate(() => server.closeIdleConnections());
  const arrival = setTimeout(() => {
    closeIdle();
    sweep = setInterval(closeIdle, 50);
  }, ARRIVAL_MS);
  let forced = false;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(
      () => {
        forced = true;
        resolve();
      },
      Math.max(graceMs, ARRIVAL_MS),
    );
  });
  await Promise.race([closed, deadline]);
  clearTimeout(arrival);
  clearInterval(sweep);
  clearTimeout(timer);
  if (forced) {
    server.closeAllConnections();
    await closed;
  }
  await node.close();
  return { forced };
}
