import { freshIp } from './client';

/** A person at the console, over any fetch (the in-process app, a server, workerd): cookie and CSRF token kept. */
export type Fetch = (request: Request) => Response | Promise<Response>;

export interface ConsoleVisitor {
  cookie: string;
  csrf: string;
  get(path: string, headers?: Record<string, string>): Promise<Response>;
  post(path: string, form: Record<string, string>, headers?: Record<string, string>): Promise<Response>;
}

export const csrfIn = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';

/** The cookie a sign-in set (its `name=value`), or '' without one. */
const cookieOf = (res: Response) => res.headers.get('set-cookie')?.split(';')[0] ?? '';

/** Signs in with `key` (a form post, as a browser does) and reads the CSRF token off the inbox. */
export async function signIn(fetch: Fetch, key: string, base = 'http://127.0.0.1'): Promise<ConsoleVisitor> {
  const form = (fields: Record<string, string>) => ({
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
    redirect: 'manual' as const,
  });
  // Each sign-in from an address of its own: the per-address window of sign-ins is not this test's subject.
  const signInForm = form({ api_key: key });
  const ip = freshIp();
  const res = await fetch(
    new Request(`${base}/console/sign-in`, { ...signInForm, headers: { ...signInForm.headers, 'x-forwarded-for': ip, 'cf-connecting-ip': ip } }),
  );
  if (res.status !== 303) throw new Error(`sign-in answered ${res.status}: ${await res.text()}`);
  const cookie = cookieOf(res);
  const visitor: ConsoleVisitor = {
    cookie,
    csrf: '',
    get: async (path, headers = {}) => fetch(new Request(`${base}${path}`, { headers: { cookie, ...headers }, redirect: 'manual' })),
    post: async (path, fields, headers = {}) => {
      const init = form(fields);
      return fetch(new Request(`${base}${path}`, { ...init, headers: { ...init.headers, cookie, ...headers } }));
    },
  };
  visitor.csrf = csrfIn(await (await visitor.get('/console/approvals')).text());
  return visitor;
}
