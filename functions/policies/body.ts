import type { Context, MiddlewareHandler } from 'hono';
import type { ZodError } from 'zod';
import { parse as parseYaml } from 'yaml';
import { invalidPolicy } from '../../shared/control/errors';
import { validationHook } from '../../shared/platform/http/app';
import type { AppEnv } from '../../shared/platform/contract/context';
import { textProblem } from '../../shared/platform/contract/input-text';
import { YAML_TYPES } from './schemas';

const mediaType = (c: Context<AppEnv>) => (c.req.header('content-type') ?? '').split(';')[0].trim().toLowerCase();
const isJson = (type: string) => /^application\/([\w.-]+\+)?json$/.test(type);

/** The first string (or key) Postgres cannot store, with its path. */
function unsafeText(root: unknown): string | null {
  const stack: [unknown, string][] = [[root, '(body)']];
  while (stack.length) {
    const [value, path] = stack.pop()!;
    if (typeof value === 'string') {
      if (textProblem(value)) return path;
    } else if (value && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        if (textProblem(k)) return path;
        stack.push([v, path === '(body)' ? k : `${path}.${k}`]);
      }
    }
  }
  return null;
}

/**
 * Runs after authentication, the tier gate and Idempotency-Key, before validation. A YAML body
 * (application/yaml, application/x-yaml, text/yaml) is parsed and handed on as the equivalent
 * JSON request; a body that is not JSON or YAML at all is 400 invalid_policy (the control plane's code), not the
 * generic malformed-JSON answer.
 */
export const policyBodyParser: MiddlewareHandler<AppEnv> = async (c, next) => {
  const type = mediaType(c);
  if ((YAML_TYPES as readonly string[]).includes(type)) {
    // Decoded by hand: workerd warns when .text() reads a body whose type does not look textual.
    const text = new TextDecoder().decode(await c.req.arrayBuffer());
    let doc: unknown;
    try {
      doc = parseYaml(text, { maxAliasCount: 100, uniqueKeys: true });
    } catch (err) {
      const message = (err instanceof Error ? err.message : String(err)).split('\n')[0];
      throw invalidPolicy(`Invalid YAML: ${message}`, [{ path: '(body)', message: `is not valid YAML: ${message}` }]);
    }
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc))
      throw invalidPolicy('The YAML document must be a mapping of policy fields', [{ path: '(body)', message: 'must be a mapping' }]);
    const bad = unsafeText(doc);
    if (bad)
      throw invalidPolicy(`${bad} must not contain NUL characters or unpaired surrogates`, [
        { path: bad, message: 'must not contain NUL characters or unpaired surrogates' },
      ]);
    const headers = new Headers(c.req.raw.headers);
    headers.set('content-type', 'application/json');
    c.req.raw = new Request(c.req.raw.url, { method: c.req.method, headers, body: JSON.stringify(doc) });
    c.req.bodyCache = {};
  } else if (isJson(type)) {
    try {
      await c.req.json();
    } catch {
      throw invalidPolicy('Invalid JSON in the policy body', [{ path: '(body)', message: 'is not valid JSON' }]);
    }
  }
  await next();
};

/** `rules.3.match` → `rules[3].match`. */
const pathOf = (path: PropertyKey[]) =>
  path.reduce<string>((at, p) => (typeof p === 'number' ? `${at}[${p}]` : at ? `${at}.${String(p)}` : String(p)), '') || '(body)';

const fallback = validationHook();

/**
 * Validation of a policy body answers 400 svc_ram.v1.control.invalid_policy naming each bad field
 * (`rules[3].match`). `prefix` limits that to the fields under it (the dry run's `policy`); other
 * input keeps the usual VALIDATION_ERROR.
 */
export function policyValidationHook(prefix?: string) {
  return (result: { success: boolean; target?: string; error?: unknown }): undefined => {
    if (result.success) return undefined;
    const error = result.error as ZodError;
    const policyIssues = result.target === 'json' ? error.issues.filter((i) => prefix === undefined || i.path[0] === prefix) : [];
    if (!policyIssues.length || policyIssues.length !== error.issues.length) return fallback(result);
    throw policyRefusal(policyIssues);
  };
}

/** 400 svc_ram.v1.control.invalid_policy naming each bad field, as the route answers it. */
export function policyRefusal(issues: ZodError['issues']) {
  const details = issues.map((i) => ({ path: pathOf(i.path), message: i.message }));
  return invalidPolicy(`Invalid policy: ${details.map((d) => `${d.path}: ${d.message}`).join('; ')}`, details);
}
