import type { Context } from 'hono';
import type { AppEnv } from './context';

export const MCP_PATH = '/mcp';
export const RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';

type Socket = { localAddress?: string; localPort?: number; encrypted?: boolean };

/**
 * Where this server is reached, for the absolute URLs it hands out (the MCP resource, the OAuth
 * issuer and endpoints): PUBLIC_URL, else the address the connection came in on (Node), else none
 * (Workers without PUBLIC_URL). Never the request's Host, which the caller chooses: a 401 would
 * point a client at a metadata URL an attacker named, and an issuer could be spoofed.
 */
export function publicBase(c: Context<AppEnv>): string | null {
  const configured = c.get('services').config.PUBLIC_URL;
  if (configured) return configured.replace(/\/+$/, '');
  const socket = (c.env as { incoming?: { socket?: Socket } } | undefined)?.incoming?.socket;
  if (!socket?.localAddress || !socket.localPort) return null;
  const address = socket.localAddress.replace(/^::ffff:(?=\d+\.)/, '');
  const host = address.includes(':') ? `[${address}]` : address;
  return `${socket.encrypted ? 'https' : 'http'}://${host}:${socket.localPort}`;
}
