import { createServer, type IncomingMessage, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';

/** An unread request body up to this size is read and thrown away after an early answer... */
export const DRAIN_MAX_BYTES = 8 * 1024 * 1024;
/** ...and a larger one closes the connection, after reading up to this much, so the answer is not lost to a reset... */
export const LINGER_MAX_BYTES = 64 * 1024 * 1024;
/** ...within this time; a slower client loses the connection instead. */
export const DRAIN_MAX_MS = 5_000;

const hasBody = (req: IncomingMessage) =>
  req.method !== 'GET' && req.method !== 'HEAD' && (req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0);

/**
 * Reads and discards what is left of a request body once its response has been sent, so the next
 * request on a keep-alive connection is parsed instead of lost. Listeners that stopped reading (the
 * web stream a handler never consumed) are detached first: they would pause the request again.
 */
function discardRest(req: IncomingMessage, maxBytes: number) {
  let bytes = 0;
  const cleanup = () => {
    clearTimeout(timer);
    req.off('data', onData);
    req.off('end', cleanup);
    req.off('error', cleanup);
    req.off('close', cleanup);
  };
  const giveUp = () => {
    cleanup();
    req.socket.destroy();
  };
  const onData = (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > maxBytes) giveUp();
  };
  const timer = setTimeout(giveUp, DRAIN_MAX_MS);
  timer.unref();
  req.removeAllListeners('data');
  req.on('data', onData);
  req.once('end', cleanup);
  req.once('error', cleanup);
  req.once('close', cleanup);
  req.resume();
}

/**
 * Answers sent before the body was read (401, 404, 405, 413) keep the connection usable: a body
 * that will be drained leaves it open, and one declared larger than we drain answers
 * `Connection: close`, so a keep-alive client never sends its next request into a closing socket.
 * Closing then lingers: Node would close the socket right after the answer, and the client, still
 * sending, would get a reset instead of the answer; our side is half-closed instead and the rest of
 * the body read until the client closes (within LINGER_MAX_BYTES and DRAIN_MAX_MS).
 */
export function keepAliveAfterEarlyAnswers(listener: RequestListener): RequestListener {
  return (req, res) => {
    if (hasBody(req)) {
      const closing = Number(req.headers['content-length'] ?? 0) > DRAIN_MAX_BYTES;
      if (closing) {
        res.setHeader('Connection', 'close');
        const socket = req.socket;
        socket.destroySoon = () => void socket.end(); // Node calls it after a `close` answer; see above
      }
      res.once('finish', () => {
        if (!req.complete) discardRest(req, closing ? LINGER_MAX_BYTES : DRAIN_MAX_BYTES);
      });
    }
    listener(req, res);
  };
}

export type FetchHandler = Parameters<typeof getRequestListener>[0];

/** The Node HTTP server for a fetch handler, listening on `host:port`; resolves once it listens. */
export async function listen(fetch: FetchHandler, opts: { host: string; port: number }): Promise<{ server: Server; address: AddressInfo }> {
  // The adapter's own clean-up waits 500 ms for a body that a paused web stream never lets arrive,
  // then closes a connection it answered as keep-alive; keepAliveAfterEarlyAnswers does that job.
  const server = createServer(keepAliveAfterEarlyAnswers(getRequestListener(fetch, { autoCleanupIncoming: false })));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return { server, address: server.address() as AddressInfo };
}
