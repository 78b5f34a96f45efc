import { sql } from 'drizzle-orm';
import { expect } from 'vitest';
import type { Tenant, TestEngine } from './harness';

/** Helpers for the spaces, shares and sharing end-to-end tests (HTTP only, plus audit reads). */
export function sharingHelpers(engine: () => TestEngine) {
  const e = () => engine();
  return {
    createSpace: (t: Tenant, body: Record<string, unknown>) => e().request('POST', '/v1/context-spaces', { key: t.key, body }),
    store: (t: Tenant, body: Record<string, unknown>) => e().request('POST', '/v1/memories', { key: t.key, body }),
    share: (t: Tenant, body: Record<string, unknown>) => e().request('POST', '/v1/spaces/share', { key: t.key, body }),
    join: (t: Tenant, token: string) => e().request('POST', '/v1/spaces/join', { key: t.key, body: { token } }),

    /** Owner shares `tag` with the recipient's address; the recipient joins with the mailed token. */
    async shareAndJoin(owner: Tenant, recipient: Tenant, tag: string, permission: 'read' | 'write' = 'read') {
      const created = await e().request('POST', '/v1/spaces/share', { key: owner.key, body: { tag, email: recipient.email, permission } });
      expect(created.status, created.text).toBe(201);
      const joined = await e().request('POST', '/v1/spaces/join', { key: recipient.key, body: { token: created.body.token } });
      expect(joined.status, joined.text).toBe(200);
      return created.body;
    },

    async audit(tenantId: string) {
      const res = await e().sql<{ operation: string; resource_type: string; resource_id: string | null; actor: string | null; metadata: any }>(
        sql`SELECT operation, resource_type, resource_id, actor, metadata FROM audit_log WHERE tenant_id = ${tenantId} ORDER BY seq`,
      );
      return res;
    },

    async milestones(t: Tenant): Promise<string[]> {
      const res = await e().request('GET', '/v1/milestones', { key: t.key });
      return res.body.milestones.map((m: { milestone: string }) => m.milestone);
    },

    /** Runs `fn` with the clock moved forward, then moves it back (the engine is shared by the file). */
    async later<T>(ms: number, fn: () => Promise<T>): Promise<T> {
      e().clock.advance(ms);
      try {
        return await fn();
      } finally {
        e().clock.advance(-ms);
      }
    },
  };
}

export const DAY = 86_400_000;
export const UNKNOWN_UUID = '01935f6e-8a2b-7c3d-9e4f-5a6b7c8d9e0f';
