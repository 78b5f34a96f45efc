import { isIP } from 'node:net';
import { getConnInfo } from '@hono/node-server/conninfo';
import type { Context } from 'hono';

/**
 * The client address behind `hops` reverse proxies of our own. Each proxy appends the address it
 * received the request from to X-Forwarded-For, so only the right-most `hops` entries were written by
 * proxies we trust; anything left of them came from the client and may be forged. The client is the
 * entry `hops` places from the right (with one proxy: the last entry). A header with fewer entries
 * gives its left-most one, as Express' hop count does; an entry that is not an IP address is ignored
 * in favour of the socket address.
 */
export function forwardedClient(header: string | undefined, hops: number): string | null {
  if (!header || hops < 1) return null;
  const entries = header
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  if (entries.length === 0) return null;
  const chosen = entries[Math.max(0, entries.length - hops)];
  return isIP(chosen) ? chosen : null;
}

/** Client IP on Node: the socket address, or the forwarded one when TRUST_PROXY counts proxy hops. */
export function nodeClientIp(trustedHops: number) {
  return (c: Context): string | null => {
    const forwarded = forwardedClient(c.req.header('x-forwarded-for'), trustedHops);
    if (forwarded) return forwarded;
    try {
      return getConnInfo(c).remote.address ?? null;
    } catch {
      return null; // in-process requests (tests) have no socket
    }
  };
}
