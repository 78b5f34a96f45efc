import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeCtx, tenantCtx } from '../shared/platform/contract/context';
import { write } from '../shared/platform/data/unit-of-work';
import { createEngine, storageName, type Tenant, type TestEngine } from './harness';

/**
 * The unit of work on the real database: one transaction for a verb and every verb it calls with
 * `work.ctx`, actor-bound audit entries and events, and the job runner and the tenants' live event
 * streams woken once after the outermost commit, never after a rollback.
 */
let engine: TestEngine;
let tenant: Tenant;
let wakes = 0;
beforeAll(async () => {
  engine = await createEngine({ jobHandlers: { 'test.noop': async () => {} } });
  tenant = await engine.newTenant('pro');
  const services = engine.node.services;
  const notify = services.notifyJobs;
  services.notifyJobs = () => {
    wakes += 1;
    notify();
  };
});
afterAll(() => engine.close());

const ctx = () =>
  tenantCtx(makeCtx(engine.node.services, { requestId: 'req_unit_of_work' }), {
    tenantId: tenant.tenantId,
    keyId: tenant.keyId,
    tier: 'pro',
    email: tenant.email,
  });

async function auditOps(): Promise<{ operation: string; actor: string; request_id: string; created_at: Date }[]> {
  const res = await engine.sql<{ operation: string; actor: string; request_id: string; created_at: Date }>(
    sql`SELECT operation, actor, request_id, created_at FROM audit_log WHERE tenant_id = ${tenant.tenantId} AND operation LIKE 'uow.%' ORDER BY seq`,
  );
  return res;
}

describe('write(ctx, work => ...)', () => {
  it('binds audit entries to the actor, the request and the request time', async () => {
    const c = ctx();
    await write(c, (work) => work.audit({ operation: 'uow.bound', resourceType: 'test' }));
    const [entry] = (await auditOps()).filter((e) => e.operation === 'uow.bound');
    expect(entry).toMatchObject({ actor: tenant.keyId, request_id: 'req_unit_of_work' });
    expect(new Date(entry.created_at).toISOString()).toBe(c.now.toISOString());
  });

  it('a verb called with work.ctx joins the transaction: when the inner one fails, the outer write is gone too', async () => {
    const failing = write(ctx(), async (outer) => {
      await outer.audit({ operation: 'uow.outer', resourceType: 'test' });
      await write(outer.ctx, async (inner) => {
        expect(inner.tx).toBe(outer.tx);
        await inner.audit({ operation: 'uow.inner', resourceType: 'test' });
        throw new Error('inner verb failed');
      });
    });
    await expect(failing).rejects.toThrow('inner verb failed');
    expect((await auditOps()).map((e) => e.operation)).not.toContain('uow.outer');
    expect((await auditOps()).map((e) => e.operation)).not.toContain('uow.inner');
  });

  it('wakes the job runner once after the outermost commit when jobs were enqueued, and never after a rollback', async () => {
    const before = wakes;
    await write(ctx(), (work) => work.audit({ operation: 'uow.no_jobs', resourceType: 'test' }));
    expect(wakes).toBe(before);

    await write(ctx(), async (outer) => {
      await outer.enqueue({ topic: 'test.noop', payload: {} });
      await write(outer.ctx, (inner) => inner.enqueue({ topic: 'test.noop', payload: {} }));
      expect(wakes).toBe(before); // not before the commit
    });
    expect(wakes).toBe(before + 1);

    await expect(
      write(ctx(), async (work) => {
        await work.enqueue({ topic: 'test.noop', payload: {} });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(wakes).toBe(before + 1);
  });

  it('wakes the live event streams of the tenants that got events, once, after the outermost commit, never after a rollback', async () => {
    const other = await engine.newTenant('pro');
    const woken: string[] = [];
    const bus = engine.node.services.eventBus!;
    const leave = [tenant.tenantId, other.tenantId].map((id) => bus.subscribe(id, { wake: () => woken.push(id), close: () => {} }));
    try {
      await write(ctx(), (work) => work.audit({ operation: 'uow.no_events', resourceType: 'test' }));
      expect(woken).toEqual([]);

      await write(ctx(), async (outer) => {
        await outer.event('rollback.completed', { n: 1 });
        await write(outer.ctx, (inner) => inner.event('rollback.completed', { n: 2 }, { tenantId: other.tenantId }));
        await outer.event('rollback.completed', { n: 3 });
        expect(woken).toEqual([]); // not before the commit
      });
      expect(woken.sort()).toEqual([tenant.tenantId, other.tenantId].sort());

      woken.length = 0;
      await expect(
        write(ctx(), async (work) => {
          await work.event('rollback.completed', { n: 4 });
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(woken).toEqual([]);
    } finally {
      for (const l of leave) l();
    }
  });

  it('runs again when Postgres aborts it for a deadlock, and the aborted attempt leaves nothing', async () => {
    let attempts = 0;
    const result = await write(ctx(), async (work) => {
      attempts += 1;
      await work.audit({ operation: `uow.attempt_${attempts}`, resourceType: 'test' });
      // What the pg driver throws when Postgres picks this transaction as the deadlock victim.
      if (attempts === 1) throw Object.assign(new Error('deadlock detected'), { code: '40P01' });
      return 'done';
    });
    expect(result).toBe('done');
    expect(attempts).toBe(2);
    const ops = (await auditOps()).map((e) => e.operation);
    expect(ops).toContain('uow.attempt_2');
    expect(ops).not.toContain('uow.attempt_1');
  });

  describe('work.lastStatement: the last statement, committed with it where the driver allows (node-postgres)', () => {
    /** Read on another connection of the pool. */
    const committedElsewhere = async (operation: string) => (await auditOps()).some((e) => e.operation === operation);

    it('answers its rows; on Postgres the write has committed when it returns, on PGlite when the write returns', async () => {
      let seenBeforeReturn: boolean | undefined;
      let builtWith: boolean | undefined;
      const rows = await write(ctx(), async (work) => {
        await work.audit({ operation: 'uow.last', resourceType: 'test' });
        const found = await work.lastStatement<{ n: number }>((commitsWithIt) => {
          builtWith = commitsWithIt;
          return sql`SELECT 41 + 1 AS n`;
        });
        // (PGlite has one connection: a read from outside would wait for this transaction.)
        if (storageName === 'postgres') seenBeforeReturn = await committedElsewhere('uow.last');
        return found;
      });
      expect(rows.map((r) => Number(r.n))).toEqual([42]);
      expect(builtWith).toBe(storageName === 'postgres');
      expect(seenBeforeReturn).toBe(storageName === 'postgres' ? true : undefined);
      expect(await committedElsewhere('uow.last')).toBe(true);
    });

    it('what runs after it fails instead of running outside the transaction', async () => {
      const late = write(ctx(), async (work) => {
        await work.lastStatement(() => sql`SELECT 1`);
        await work.audit({ operation: 'uow.after_last', resourceType: 'test' });
      });
      // (drizzle wraps the driver's error: "Failed query: ...", the cause says why.)
      if (storageName === 'postgres') await expect(late).rejects.toMatchObject({ cause: { message: expect.stringContaining('already committed') } });
      else await late;
      expect(await committedElsewhere('uow.after_last')).toBe(storageName !== 'postgres');
    });

    it('a statement that raises 40001 rolls the write back and runs it again', async () => {
      let attempts = 0;
      await write(ctx(), async (work) => {
        attempts += 1;
        await work.audit({ operation: `uow.last_attempt_${attempts}`, resourceType: 'test' });
        await work.lastStatement(() => sql`SELECT CASE WHEN ${attempts} = 1 THEN engram_retry('first attempt') ELSE true END`);
      });
      expect(attempts).toBe(2);
      const ops = (await auditOps()).map((e) => e.operation);
      expect(ops).toContain('uow.last_attempt_2');
      expect(ops).not.toContain('uow.last_attempt_1');
    });

    it('inside a verb joined to another write it does not commit: the outer write goes on', async () => {
      let builtWith: boolean | undefined;
      await write(ctx(), async (outer) => {
        await write(outer.ctx, (inner) =>
          inner.lastStatement((commitsWithIt) => {
            builtWith = commitsWithIt;
            return sql`SELECT 1`;
          }),
        );
        await outer.audit({ operation: 'uow.after_joined_last', resourceType: 'test' });
      });
      expect(builtWith).toBe(false);
      expect(await committedElsewhere('uow.after_joined_last')).toBe(true);
    });
  });

  it('does not run again for other errors', async () => {
    let attempts = 0;
    await expect(
      write(ctx(), async () => {
        attempts += 1;
        throw Object.assign(new Error('not null violation'), { code: '23502' });
      }),
    ).rejects.toThrow('not null violation');
    expect(attempts).toBe(1);
  });
});
