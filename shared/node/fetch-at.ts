import { isIPv6, type LookupFunction } from 'node:net';
import { Agent, fetch, type RequestInit as UndiciRequestInit } from 'undici';

/**
 * `fetch` for a URL whose name was already resolved and checked: the connection goes to one of
 * `addresses`, never to what the name resolves to now, so a DNS answer that changes between the
 * check and the connection (rebinding) cannot redirect it to loopback or a private network. The
 * name stays what TLS verifies (SNI and certificate) and what the Host header says, because only
 * the socket's `lookup` is replaced. Node's global fetch takes no dispatcher of ours, so this is the
 * undici package's fetch with an agent of its own. Follows no redirect, as `redirect: 'manual'`.
 */
export async function fetchAt(url: string, init: RequestInit, addresses: string[]): Promise<Response> {
  if (!addresses.length) throw new Error('no address to connect to');
  const body = init.body;
  // Only strings: other bodies (Blob, FormData, streams) of the global fetch are other classes
  // than this undici's, which would not always read them as the same body.
  if (body !== undefined && body !== null && typeof body !== 'string') throw new TypeError('fetchAt sends string bodies only');
  const protocol = new URL(url).protocol;
  if (protocol !== 'https:' && protocol !== 'http:') throw new TypeError(`unsupported protocol ${protocol}`);

  const family = (address: string) => (isIPv6(address) ? 6 : 4);
  const lookup = ((_hostname, options, callback) => {
    if (options.all)
      callback(
        null,
        addresses.map((address) => ({ address, family: family(address) })),
      );
    else callback(null, addresses[0]!, family(addresses[0]!));
  }) as LookupFunction;
  // One agent per call: its lookup belongs to these addresses, and no socket outlives the call.
  const dispatcher = new Agent({ connect: { lookup } });
  try {
    const res = await fetch(url, {
      method: init.method ?? 'GET',
      headers: [...new Headers(init.headers)],
      body: body ?? undefined,
      signal: init.signal ?? undefined,
      redirect: 'manual',
      dispatcher,
    } satisfies UndiciRequestInit);
    // Graceful: the agent lets the running request finish, so the socket closes once the body is
    // read to its end, cancelled or aborted by the signal.
    void dispatcher.close().catch(() => undefined);
    // The same interface as the global Response, from this undici's copy of the class. Not
    // rewrapped: the undici response cancels its body stream when it is collected.
    return res as unknown as Response;
  } catch (err) {
    // An abort rejects with the signal's reason, as the global fetch does: the caller tells a
    // timeout from a failure by its name.
    void dispatcher.destroy().catch(() => undefined);
    throw err;
  }
}
