import http from 'node:http';
import https from 'node:https';
import { isIPv6, type LookupFunction } from 'node:net';
import { Readable } from 'node:stream';

/** Statuses whose response has no body (the Response constructor refuses one). */
const NO_BODY = new Set([204, 205, 304]);

/**
 * `fetch` for a URL whose name was already resolved and checked: the connection goes to one of
 * `addresses`, never to what the name resolves to now, so a DNS answer that changes between the
 * check and the connection (rebinding) cannot redirect it to loopback or a private network. The
 * name stays what TLS verifies (SNI and certificate) and what the Host header says. Node's fetch
 * (undici) has no such hook without the undici package, so this is node:http(s) with a `lookup`
 * that answers the checked addresses. Follows no redirect, as `redirect: 'manual'` would.
 */
export function fetchAt(url: string, init: RequestInit, addresses: string[]): Promise<Response> {
  if (!addresses.length) return Promise.reject(new Error('no address to connect to'));
  const target = new URL(url);
  const family = (address: string) => (isIPv6(address) ? 6 : 4);
  const lookup = ((_hostname, options, callback) => {
    if (options.all) callback(null, addresses.map((address) => ({ address, family: family(address) })));
    else callback(null, addresses[0]!, family(addresses[0]!));
  }) as LookupFunction;
  const headers = Object.fromEntries(new Headers(init.headers).entries());
  const body = init.body;
  if (body !== undefined && body !== null && typeof body !== 'string') return Promise.reject(new TypeError('fetchAt sends string bodies only'));
  const transport = target.protocol === 'https:' ? https : target.protocol === 'http:' ? http : null;
  if (!transport) return Promise.reject(new TypeError(`unsupported protocol ${target.protocol}`));

  return new Promise<Response>((resolve, reject) => {
    const req = transport.request(
      target,
      { method: init.method ?? 'GET', headers, lookup, signal: init.signal ?? undefined, agent: false },
      (res) => {
        const status = res.statusCode ?? 0;
        if (status < 200 || status > 599) {
          res.destroy();
          reject(new Error(`unexpected status ${status}`));
          return;
        }
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          if (value === undefined) continue;
          for (const v of Array.isArray(value) ? value : [value]) responseHeaders.append(name, v);
        }
        const stream = NO_BODY.has(status) ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>);
        if (!stream) res.resume();
        resolve(new Response(stream, { status, statusText: res.statusMessage, headers: responseHeaders }));
      },
    );
    req.on('error', (err) => {
      // The caller tells a timeout from a failure by the abort reason's name, as with fetch.
      const reason = init.signal?.aborted ? init.signal.reason : null;
      reject(reason instanceof Error ? reason : err);
    });
    req.end(body ?? undefined);
  });
}
