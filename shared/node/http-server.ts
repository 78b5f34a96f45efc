import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
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
 * A request the handler destroyed (it cancelled the body's web stream: a streamed route past its
 * own cap) yields nothing more and Node has already let go of its socket (`req.socket` is null);
 * its answer closed the connection (see keepAliveAfterEarlyAnswers), and the socket is destroyed
 * if the client has not closed it within DRAIN_MAX_MS.
 */
function discardRest(req: IncomingMessage, socket: Socket, maxBytes: number) {
  if (req.destroyed) {
    const timer = setTimeout(() => socket.destroy(), DRAIN_MAX_MS);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
    return;
  }
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
    socket.destroy();
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

/** The answer closes the connection, lingering: see keepAliveAfterEarlyAnswers. */
function closeAfterAnswer(res: ServerResponse, socket: Socket) {
  res.setHeader('Connection', 'close');
  socket.destroySoon = () => void socket.end(); // Node calls it after a `close` answer
}

/**
 * Answers sent before the body was read (401, 404, 405, 413) keep the connection usable: a body
 * that will be drained leaves it open, and one declared larger than we drain answers
 * `Connection: close`, so a keep-alive client never sends its next request into a closing socket.
 * Closing then lingers: Node would close the socket right after the answer, and the client, still
 * sending, would get a reset instead of the answer; our side is half-closed instead and the rest of
 * the body read until the client closes (within LINGER_MAX_BYTES and DRAIN_MAX_MS). A body the
 * handler stopped reading before it answered (a chunked body past a streamed route's own cap)
 * cannot be drained any more: that answer closes the connection too.
 */
export function keepAliveAfterEarlyAnswers(listener: RequestListener): RequestListener {
  return (req, res) => {
    if (hasBody(req)) {
      const socket = req.socket; // kept: Node sets req.socket to null when a handler destroys the request
      let closing = Number(req.headers['content-length'] ?? 0) > DRAIN_MAX_BYTES;
      if (closing) closeAfterAnswer(res, socket);
      const writeHead = res.writeHead;
      res.writeHead = function (this: ServerResponse, ...args: Parameters<typeof writeHead>) {
        if (!closing && req.destroyed && !req.complete) {
          closing = true;
          closeAfterAnswer(res, socket);
        }
        return writeHead.apply(this, args);
      } as typeof writeHead;
      res.once('finish', () => {
        if (!req.complete) discardRest(req, socket, closing ? LINGER_MAX_BYTES : DRAIN_MAX_BYTES);
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
