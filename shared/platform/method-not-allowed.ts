import { TrieRouter } from 'hono/router/trie-router';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/**
 * For a request no route matched: the methods that do have a route at its path (empty when the
 * path itself is unknown), for `405` and its `Allow` header. Reads the app's route list (`app.routes`,
 * middleware excluded) once, on the first miss, when every family is registered. HEAD comes with GET.
 */
export function allowedMethodsOf(routes: readonly { method: string; path: string }[]) {
  let router: TrieRouter<true> | null = null;
  return (path: string): string[] => {
    if (!router) {
      router = new TrieRouter<true>();
      for (const r of routes) if (r.method !== 'ALL') router.add(r.method, r.path, true);
    }
    const allowed = METHODS.filter((m) => (router!.match(m, path)[0] as unknown[]).length > 0) as string[];
    if (allowed.includes('GET') && !allowed.includes('HEAD')) allowed.splice(allowed.indexOf('GET') + 1, 0, 'HEAD');
    return allowed;
  };
}
