import { readFileSync } from 'node:fs';
import { Pool as NeonPool } from '@neondatabase/serverless';
import { sql } from 'drizzle-orm';
import { NeonSession, NeonTransaction, drizzle as drizzleNeon } from 'drizzle-orm/neon-serverless';
import { NodePgSession, NodePgTransaction, drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { PgTransaction } from 'drizzle-orm/pg-core';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPglite } from '../shared/node/database';
import { ConfigError, parseConfig } from '../shared/platform/contract/config';
import type { Db } from '../shared/platform/data/db';
import { DRIZZLE_VERSION_CHECKED, hooksOf, SHORTCUTS } from '../shared/platform/data/driver';
import {
  dialectOf,
  inlinesParams,
  missingInternals,
  replaceTransaction,
  sessionOf,
  transactionClientOf,
  transactionOver,
} from '../shared/platform/data/driver/internals';
import { createEngine, type TestEngine } from './harness';

/**
 * The driver shortcuts (shared/platform/data/driver/) lean on parts of drizzle it keeps private. Each
 * test here checks one of them on the installed drizzle-orm, so an upgrade that moves one fails
 * here, naming it, instead of somewhere in the middle of a request. What to do then is in every
 * message: bring shared/platform/data/driver/internals.ts up to date (or run with DB_DRIVER_SHORTCUTS=off
 * meanwhile).
 */
const FIX = 'update shared/platform/data/driver/internals.ts for this drizzle-orm (DB_DRIVER_SHORTCUTS=off runs without it meanwhile)';
const installedDrizzle = (JSON.parse(readFileSync(new URL('../node_modules/drizzle-orm/package.json', import.meta.url), 'utf8')) as { version: string })
  .version;

/** A driver client that answers every query with one row and remembers what it was sent. */
function recordingClient() {
  const sent: { config: unknown; values: unknown }[] = [];
  return {
    sent,
    query: async (config: unknown, values?: unknown) => (sent.push({ config, values }), { rows: [{ ok: 1 }], fields: [], command: 'SELECT', rowCount: 1 }),
  };
}

describe("drizzle's internals the driver shortcuts use", () => {
  it('drizzle-orm is the version the shortcuts were checked against', () => {
    const pinned = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { dependencies: Record<string, string> }).dependencies[
      'drizzle-orm'
    ];
    const why = `drizzle-orm ${installedDrizzle} (package.json: ${pinned}), but the driver shortcuts were checked against ${DRIZZLE_VERSION_CHECKED}: run this file, ${FIX}, then set DRIZZLE_VERSION_CHECKED`;
    expect(installedDrizzle, why).toBe(DRIZZLE_VERSION_CHECKED);
    expect(pinned, why).toBe(DRIZZLE_VERSION_CHECKED);
  });

  const pools = [
    { driver: 'node-postgres', db: () => drizzlePg(new pg.Pool({ max: 1 })) as unknown as Db, Session: NodePgSession, Transaction: NodePgTransaction },
    { driver: 'neon-serverless', db: () => drizzleNeon(new NeonPool({ max: 1 })) as unknown as Db, Session: NeonSession, Transaction: NeonTransaction },
  ];
  for (const { driver, db: open, Session, Transaction } of pools) {
    describe(driver, () => {
      it('has db.session.prepareQuery, db.session.options, db.dialect.sqlToQuery and db.transaction', () => {
        expect(missingInternals(open()), `drizzle-orm/${driver}: ${FIX}`).toEqual([]);
      });

      it('builds a transaction as new Session(client, dialect, schema, options) and new Transaction(dialect, session, schema)', async () => {
        const client = recordingClient();
        const tx = transactionOver(open(), { Session, Transaction }, client);
        const why = `drizzle-orm/${driver}'s ${Session.name}/${Transaction.name} constructors or prepareQuery(query, fields, name, arrayMode) changed: ${FIX}`;
        expect(tx, why).toBeInstanceOf(PgTransaction);
        // The session sends a named statement through the client it was built over.
        const result = await sessionOf(tx)
          .prepareQuery({ sql: 'SELECT $1::int AS ok', params: [1] }, undefined, 'engram_check', false)
          .execute();
        expect(result, why).toMatchObject({ rows: [{ ok: 1 }] });
        expect(client.sent, why).toEqual([{ config: expect.objectContaining({ text: 'SELECT $1::int AS ok', name: 'engram_check' }), values: [1] }]);
        // And the transaction handle's own queries go there too.
        await tx.execute(sql`SELECT ${2}::int AS ok`);
        expect(client.sent[1], why).toEqual({ config: expect.objectContaining({ text: 'SELECT $1::int AS ok' }), values: [2] });
      });
    });
  }

  it('compiles raw SQL with db.dialect.sqlToQuery and marks inlined parameters with SQL.shouldInlineParams', () => {
    const db = pools[0].db();
    expect(dialectOf(db).sqlToQuery(sql`SELECT ${1}::int, ${'a'}`), `db.dialect.sqlToQuery: ${FIX}`).toMatchObject({
      sql: 'SELECT $1::int, $2',
      params: [1, 'a'],
    });
    expect(inlinesParams(sql`SELECT ${1}`.inlineParams()), `SQL.shouldInlineParams: ${FIX}`).toBe(true);
    expect(inlinesParams(sql`SELECT ${1}`), `SQL.shouldInlineParams: ${FIX}`).toBe(false);
  });

  it('lets db.transaction be replaced on one handle, leaving drizzle’s method to call', async () => {
    const db = pools[0].db();
    const seen: string[] = [];
    replaceTransaction(db, (drizzleTransaction) => ((fn: never, config: never) => (seen.push('ours'), drizzleTransaction(fn, config))) as Db['transaction']);
    await expect(db.transaction(async () => 'ran')).rejects.toThrow(); // no server: drizzle's own transaction tries to connect
    expect(seen, `db.transaction: ${FIX}`).toEqual(['ours']);
    expect(Object.hasOwn(pools[0].db(), 'transaction'), 'another handle keeps drizzle’s method').toBe(false);
  });

  describe('pglite', () => {
    let database: Awaited<ReturnType<typeof openPglite>>;
    beforeAll(async () => {
      database = await openPglite({ dataDir: 'memory://' });
    }, 120_000);
    afterAll(() => database?.close());

    it("has the same session and dialect, and a transaction's tx.session.client is PGlite's transaction", async () => {
      expect(missingInternals(database.db), `drizzle-orm/pglite: ${FIX}`).toEqual([]);
      const seen = await database.db.transaction(async (tx) => {
        const client = transactionClientOf<{ exec?: unknown; query?: unknown }>(tx);
        expect(typeof client?.exec, `drizzle-orm/pglite: tx.session.client is not PGlite's Transaction: ${FIX}`).toBe('function');
        return (await (client as { query(q: string): Promise<{ rows: { n: number }[] }> }).query('SELECT 41 + 1 AS n')).rows[0].n;
      });
      expect(seen).toBe(42);
    });
  });
});

describe('DB_DRIVER_SHORTCUTS=off', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await createEngine({ env: { DB_DRIVER_SHORTCUTS: 'off' } });
  }, 120_000);
  afterAll(() => engine?.close());

  it('is a setting of its own, refused when it is not on or off', () => {
    expect(parseConfig({}).DB_DRIVER_SHORTCUTS).toBe(true);
    expect(parseConfig({ DB_DRIVER_SHORTCUTS: 'off' }).DB_DRIVER_SHORTCUTS).toBe(false);
    expect(() => parseConfig({ DB_DRIVER_SHORTCUTS: 'sometimes' })).toThrow(ConfigError);
  });

  it("leaves drizzle's own transactions and statements in place", () => {
    const db = engine.node.services.db;
    expect(Object.hasOwn(db, 'transaction')).toBe(false);
    expect(hooksOf(db)[SHORTCUTS]).toBeUndefined();
  });

  it('still serves the store, search, update, delete and rollback', async () => {
    const t = await engine.newTenant('pro');
    const store = async (observation: string) => {
      const res = await engine.request('POST', '/v1/memories', { key: t.key, body: { observation, tags: ['billing'], auto_link: false } });
      expect(res.status, res.text).toBe(201);
      return res.body.id as string;
    };
    const kept = await store('The user prefers invoices in EUR.');
    const batch = await engine.request('POST', '/v1/memories/batch', {
      key: t.key,
      body: { memories: [{ observation: 'Deploys happen on Tuesdays.' }, { observation: 'The cat is called Luna.' }] },
    });
    expect(batch.status, batch.text).toBe(200);
    engine.clock.advance(1000);
    const target = engine.clock.now().toISOString();
    engine.clock.advance(1000);
    const later = await store('Created after the target.');
    const changed = await engine.request('PATCH', `/v1/memories/${kept}`, { key: t.key, body: { observation: 'The user prefers invoices in USD.' } });
    expect(changed.status, changed.text).toBe(200);
    const found = await engine.request('GET', '/v1/memories/search?q=invoices%20currency&limit=3', { key: t.key });
    expect(found.status, found.text).toBe(200);
    expect(found.body.memories[0].uuid).toBe(kept);
    expect((await engine.request('DELETE', `/v1/memories/${later}`, { key: t.key })).status).toBe(200);
    engine.clock.advance(1000);
    const rollback = await engine.request('POST', '/v1/rollback', { key: t.key, body: { target } });
    expect(rollback.status, rollback.text).toBe(200);
    const back = await engine.request('GET', `/v1/memories/${kept}`, { key: t.key });
    expect(back.body.observation).toBe('The user prefers invoices in EUR.');
    const audit = await engine.request('GET', '/v1/audit/verify', { key: t.key });
    expect(audit.status, audit.text).toBe(200);
  });
});
