import { expect, it } from 'vitest';
import type { TestEngine } from './harness';

/**
 * The checks every protected route must pass (Unkey's common-tests idea): no key, a malformed
 * key, an unknown key and a revoked key are all 401 UNAUTHORIZED with the one error body.
 */
export function itRequiresAKey(engine: () => TestEngine, method: string, path: string, body?: unknown) {
  it(`${method} ${path} refuses a missing key`, async () => {
    const res = await engine().request(method, path, { body });
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ code: 'UNAUTHORIZED', status: 401 });
    expect(res.body.request_id).toMatch(/^req_/);
  });

  it(`${method} ${path} refuses malformed and unknown keys`, async () => {
    for (const key of ['not-a-key', `sk_${'A'.repeat(43)}`]) {
      const res = await engine().request(method, path, { key, body });
      expect(res.status, key).toBe(401);
      expect(res.body.code).toBe('UNAUTHORIZED');
    }
    const basic = await engine().request(method, path, { headers: { authorization: 'Basic dXNlcjpwYXNz' }, body });
    expect(basic.status).toBe(401);
  });

  it(`${method} ${path} refuses a revoked key`, async () => {
    const tenant = await engine().newTenant();
    const revoked = await engine().request('POST', '/v1/keys/revoke', { key: tenant.key, body: { key_id: tenant.keyId } });
    expect(revoked.status).toBe(200);
    const res = await engine().request(method, path, { key: tenant.key, body });
    expect(res.status).toBe(401);
    expect(res.body.message).toMatch(/revoked/);
  });
}
