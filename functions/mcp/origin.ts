import { type Config, isLoopbackHost } from '../../shared/platform/contract/config';

/**
 * Whether a browser page from `origin` may call /mcp: no Origin (not a browser), PUBLIC_URL's
 * origin, an origin listed in MCP_ALLOWED_ORIGINS, or a loopback page while this server is reached
 * on loopback. The request's own Host is not trusted: a page that rebinds its DNS name to this
 * server sends a matching Host and Origin, and is refused.
 */
export function originAllowed(origin: string | undefined, requestUrl: string, config: Pick<Config, 'PUBLIC_URL' | 'MCP_ALLOWED_ORIGINS'>): boolean {
  if (!origin) return true;
  let from: URL;
  try {
    from = new URL(origin);
  } catch {
    return false;
  }
  if (config.PUBLIC_URL && from.origin === new URL(config.PUBLIC_URL).origin) return true;
  const listed = (config.MCP_ALLOWED_ORIGINS ?? '')
    .split(',')
    .map((o) => o.trim().replace(/\/$/, ''))
    .filter(Boolean);
  if (listed.includes(from.origin)) return true;
  const host = (u: URL) => u.hostname.replace(/^\[|\]$/g, '');
  return isLoopbackHost(host(from)) && isLoopbackHost(host(new URL(requestUrl)));
}
