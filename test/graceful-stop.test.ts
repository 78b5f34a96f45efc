import { createServer } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { Services } from '../shared/platform/contract/services';
import { gracefulStop, trackResponses } from '../shared/node/shutdown';

/**
 * The stop's sweep of idle connections (docs/operations.md#shutdown) must not reset a connection
 * whose request has reached the machine but not yet the server: when the server's event loop was
 * busy past the sweep's moment, the request waits unread in the socket, and the sweep must read
 * it before it judges the connection idle.
 */
function request(path: string): string {
  return `GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: keep-alive\r\n\r\n`;
}

/** Reads from the socket until `done(text)` holds; rejects on a reset or an early close. */
function readUntil(socket: Socket, done: (text: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString('utf8');
      if (done(text)) {
        socket.off('data', onData);
        resolve(text);
      }
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.once('close', () => reject(new Error(`closed after ${JSON.stringify(text)}`)));
  });
}

describe('gracefulStop', () => {
  it('answers a request that arrived on an idle connection while the event loop was busy past the sweep', async () => {
    const server = createServer((req, res) => res.end(`answered ${req.url}`));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    trackResponses(server);
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));

    // One answered request leaves the connection open and idle.
    socket.write(request('/first'));
    expect(await readUntil(socket, (t) => t.includes('answered /first'))).toMatch(/^HTTP\/1.1 200/);

    const stopped = gracefulStop(server, { services: {} as Services, close: async () => {} }, 5_000);
    await new Promise((resolve) => setImmediate(resolve)); // the stop has set its arrival timer
    const answer = readUntil(socket, (t) => t.includes('answered /second'));
    socket.write(request('/second'));
    // The server's thread is busy past the arrival timer: the request is in the socket, unread.
    for (const until = Date.now() + 1_200; Date.now() < until; );

    expect(await answer).toMatch(/^HTTP\/1.1 200[\s\S]*Connection: close/i);
    expect(await stopped).toEqual({ forced: false });
  });
});
