import { textProblem } from '../../shared/platform/contract/input-text';
import { nestsAtMost } from '../../shared/platform/contract/params';
import type { BoundTool } from './catalog';

/** What the request a tool call makes carries besides its arguments. */
export interface Caller {
  /** The MCP request's Authorization header: the tool call acts with the same key. */
  authorization: string;
  /** The MCP request's origin, so the inner request resolves against the same host. */
  origin: string;
  requestId?: string;
}

/** The answer of the route a tool call went through. */
export interface RouteAnswer {
  status: number;
  body: unknown;
}

export type Fetch = (request: Request) => Promise<Response>;

/** A path or query value: lists comma-separated, other non-strings as JSON (never a throwing `String()`). */
const asParam = (value: unknown): string => {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map((v) => (typeof v === 'string' ? v : (JSON.stringify(v) ?? ''))).join(',');
  return JSON.stringify(value) ?? '';
};

/**
 * A path argument as one percent-encoded segment. `.` and `..` (also as `%2E`) are steps in a URL's
 * path, never a segment: refused before (unsafeArgument), and never sent should one get here.
 */
function pathSegment(value: string): string {
  if (value === '.' || value === '..') throw new Error('a path argument "." or ".." reached the request');
  return encodeURIComponent(value);
}

/**
 * The HTTP request a tool call stands for: path parameters in the path, query parameters in the
 * query (lists comma-separated, as the API takes them), the other arguments as the JSON body. The
 * route validates all of it, so a wrong argument is answered exactly as over HTTP.
 */
export function requestFor(tool: BoundTool, args: Record<string, unknown>, caller: Caller): Request {
  let path = tool.path;
  const query = new URLSearchParams();
  const body: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(args)) {
    if (value === undefined || (key === 'confirm' && tool.spec.confirm)) continue;
    if (tool.pathKeys.includes(key)) path = path.replace(`{${key}}`, pathSegment(asParam(value)));
    else if (tool.queryKeys.includes(key)) query.set(key, asParam(value));
    else body[key] = value;
  }
  // A path parameter the model left out names nothing; the route answers it as an unknown id.
  path = path.replace(/\{[^}]+\}/g, '-');
  const url = `${caller.origin}${path}${query.size ? `?${query}` : ''}`;
  const headers: Record<string, string> = { authorization: caller.authorization };
  if (caller.requestId) headers['x-request-id'] = caller.requestId;
  const sendsBody = tool.hasBody;
  if (sendsBody) headers['content-type'] = 'application/json';
  return new Request(url, { method: tool.method, headers, body: sendsBody ? JSON.stringify(body) : undefined });
}

/** Arguments the route takes nowhere: a route without a body would otherwise drop them unseen. */
export function unknownArguments(tool: BoundTool, args: Record<string, unknown>): string[] {
  if (tool.hasBody) return []; // the route refuses unknown body fields itself
  return Object.keys(args).filter((k) => !tool.pathKeys.includes(k) && !tool.queryKeys.includes(k) && !(k === 'confirm' && tool.spec.confirm));
}

/**
 * How deep an argument may nest: far past what any route takes (free-form objects stop at
 * MAX_METADATA_DEPTH), and far from where turning it into the route's request would overflow the
 * stack (JSON.stringify recurses).
 */
export const MAX_ARGUMENT_DEPTH = 256;

/**
 * An argument the route's request cannot carry as given, refused as the route refuses bad input
 * over HTTP (400 VALIDATION_ERROR naming it): one nested deeper than MAX_ARGUMENT_DEPTH; a path
 * argument `.` or `..`, which a URL resolves as a step up to another route; a path or query
 * argument with text a URL cannot carry (a lone surrogate does not percent-encode) or Postgres
 * cannot store.
 */
export function unsafeArgument(tool: Pick<BoundTool, 'pathKeys' | 'queryKeys'>, args: Record<string, unknown>): { name: string; problem: string } | null {
  for (const [name, value] of Object.entries(args)) {
    if (!nestsAtMost(value, MAX_ARGUMENT_DEPTH)) return { name, problem: `must nest at most ${MAX_ARGUMENT_DEPTH} levels deep` };
    const inPath = tool.pathKeys.includes(name);
    if (!inPath && !tool.queryKeys.includes(name)) continue;
    const text = asParam(value);
    if (inPath && (text === '.' || text === '..')) return { name, problem: 'must not be "." or ".."' };
    const problem = textProblem(text);
    if (problem) return { name, problem };
  }
  return null;
}

export async function callRoute(fetch: Fetch, tool: BoundTool, args: Record<string, unknown>, caller: Caller): Promise<RouteAnswer> {
  const res = await fetch(requestFor(tool, args, caller));
  const text = await res.text();
  let body: unknown = null;
  if (text) {
    try {
      body = JSON.parse(text);
    } catch {
      body = { text };
    }
  }
  return { status: res.status, body };
}
