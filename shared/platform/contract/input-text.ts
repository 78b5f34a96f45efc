import type { Context } from 'hono';
import { routePath } from 'hono/route';
import type { AppEnv } from './context';
import { validationError } from './errors';

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Text Postgres cannot store: a NUL character (text and jsonb refuse U+0000) or an unpaired UTF-16
 * surrogate (jsonb refuses `\ud800`; text would silently get U+FFFD). One check for every route,
 * present and future, before any handler runs: a JSON body (every string and every key), the
 * query and the path parameters. The answer is 400 VALIDATION_ERROR naming the field.
 */
export function textProblem(s: string): string | null {
  if (s.includes('\u0000')) return 'must not contain NUL characters';
  if (LONE_SURROGATE.test(s)) return 'must not contain unpaired UTF-16 surrogates';
  return null;
}

const isJson = (contentType: string | undefined) => !!contentType && /^application\/([\w.-]+\+)?json\b/i.test(contentType.trim());

/** The first bad string in a parsed JSON value, walked without recursion (bodies may nest deeply). */
export function findInJson(root: unknown): { path: string; problem: string } | null {
  const stack: [unknown, string][] = [[root, '']];
  while (stack.length) {
    const [value, path] = stack.pop()!;
    if (typeof value === 'string') {
      const problem = textProblem(value);
      if (problem) return { path: path || '(body)', problem };
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push([value[i], path ? `${path}.${i}` : String(i)]);
    } else if (value && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        const at = path ? `${path}.${k}` : k;
        const problem = textProblem(k);
        if (problem) return { path: at, problem: `key ${problem}` };
        stack.push([v, at]);
      }
    }
  }
  return null;
}

const decode = (s: string) => {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return s;
  }
};

/** The name of the path parameter at segment `index` of the matched route, if it is one. */
function pathParamName(route: string, index: number): string | null {
  const segment = route.split('/')[index];
  return segment?.startsWith(':') ? segment.slice(1).replace(/\{.*$/, '').replace(/\?$/, '') : null;
}

/**
 * The URL: percent-decoding never yields a lone surrogate (decodeURIComponent refuses those), so
 * only %00 can hide here. Called for every request, so the caller first checks for `%00` at all.
 */
export function rejectNulInUrl(c: Context<AppEnv>): void {
  const url = c.req.url;
  const q = url.indexOf('?');
  const pathPart = q < 0 ? url.slice(url.indexOf('/', url.indexOf('//') + 2)) : url.slice(url.indexOf('/', url.indexOf('//') + 2), q);
  const bad = pathPart.split('/').findIndex((s) => s.includes('%00'));
  if (bad >= 0) throw validationError(pathParamName(routePath(c, -1), bad) ?? 'path', 'must not contain NUL characters');
  for (const pair of q < 0 ? [] : url.slice(q + 1).split('&')) {
    if (!pair.includes('%00')) continue;
    const eq = pair.indexOf('=');
    const name = decode(eq < 0 ? pair : pair.slice(0, eq));
    if (textProblem(name)) throw validationError('query', 'parameter names must not contain NUL characters');
    throw validationError(name.slice(0, 64), 'must not contain NUL characters');
  }
}

/** A JSON body of a POST/PUT/PATCH/DELETE: every string and every key. */
export async function rejectUnsafeBody(c: Context<AppEnv>): Promise<void> {
  if (!isJson(c.req.header('content-type'))) return;
  let body: unknown;
  try {
    // Hono caches the parsed body: the route's validator reads this one, nothing is parsed twice.
    body = await c.req.json();
  } catch {
    return; // malformed JSON is the validator's to report (or no body at all)
  }
  const found = findInJson(body);
  if (found) throw validationError(found.path, found.problem);
}
