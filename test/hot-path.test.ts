import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CachedTrieRouter } from '../shared/platform/http/app';
import { randomBase62 } from '../shared/platform/contract/crypto';
import { openPglite, preparedQuery, sqlLiteral } from '../shared/node/database';
import { dayOf, periodOf } from '../shared/platform/contract/time';
import { placeLiterals } from '../shared/platform/data/driver';

// The pieces the per-request path was made cheaper with (README, Performance), checked on their own.

describe('prepared statements on PGlite', () => {
  let database: Awaited<ReturnType<typeof openPglite>>;
  beforeAll(async () => {
    database = await openPglite({ dataDir: 'memory://' });
  });
  afterAll(() => database.close());

  it('passes every literal through unchanged, whatever it contains', async () => {
    const nasty = ["it's", 'back\\slash', "\\'; DROP TABLE x; --", "E'\\x41'", 'ünïcødé ✓', '', '$1', '{"a","b"}'];
    const query = preparedQuery(database.client);
    for (const s of nasty) {
      const [row] = await query<{ v: string }>('SELECT $1::text AS v', [s]);
      expect(row.v).toBe(s);
    }
    const [row] = await query<{ n: number; b: boolean; z: string | null; t: string }>(
      'SELECT $1::bigint AS n, $2::boolean AS b, $3::text AS z, $4::timestamptz::text AS t',
      [42, true, null, new Date('2026-01-02T03:04:05.678Z')],
    );
    expect(row).toEqual({ n: 42, b: true, z: null, t: '2026-01-02 03:04:05.678+00' });
    const [arrays] = await query<{ a: string[] }>('SELECT $1::text[] AS a', ['{"x,y","q\\"uote",NULL}']);
    expect(arrays.a).toEqual(['x,y', 'q"uote', null]);
  });

  it('refuses values it cannot write as a literal', () => {
    expect(() => sqlLiteral('a\0b')).toThrow(/NUL/);
    expect(() => sqlLiteral(Number.NaN)).toThrow();
    expect(() => sqlLiteral({})).toThrow();
  });

  it('writes literals where their placeholders are, the second time from the text already cut', () => {
    const text = 'SELECT $1, $10, $2 FROM t WHERE a = $1 AND b = $11';
    const literals = Array.from({ length: 11 }, (_, i) => `E'v${i + 1}'`);
    const expected = "SELECT E'v1', E'v10', E'v2' FROM t WHERE a = E'v1' AND b = E'v11'";
    expect(placeLiterals(text, literals)).toBe(expected);
    expect(placeLiterals(text, literals)).toBe(expected);
    expect(placeLiterals('$1', ['x'])).toBe('x');
    expect(placeLiterals('$1$2 ', ['x', 'y'])).toBe('xy ');
    expect(placeLiterals('no placeholders', [])).toBe('no placeholders');
  });

  it('prepares each text once, survives a failed prepare, and runs unprepared past its limit', async () => {
    const query = preparedQuery(database.client, 2);
    await expect(query('SELECT nonsense FROM nowhere WHERE x = $1', [1])).rejects.toThrow();
    expect(await query<{ n: number }>('SELECT $1::int + 1 AS n', [1])).toEqual([{ n: 2 }]);
    expect(await query<{ n: number }>('SELECT $1::int + 1 AS n', [2])).toEqual([{ n: 3 }]);
    expect(await query<{ n: number }>('SELECT $1::int + 2 AS n', [2])).toEqual([{ n: 4 }]);
    expect(await query<{ n: number }>('SELECT $1::int + 3 AS n', [2])).toEqual([{ n: 5 }]); // third text: not prepared
    const names = await database.client.query<{ statement: string }>("SELECT statement FROM pg_prepared_statements WHERE name LIKE 'engram_q%'");
    expect(names.rows.map((r) => r.statement).filter((s) => s.includes('$1::int +'))).toHaveLength(2);
  });
});

describe('CachedTrieRouter', () => {
  it('answers like the trie and remembers only matches without parameters', () => {
    const router = new CachedTrieRouter<string>();
    router.add('ALL', '*', 'mw');
    router.add('GET', '/v1/memories/search', 'search');
    router.add('GET', '/v1/memories/:id', 'one');
    const names = (r: ReturnType<typeof router.match>) => (r[0] as [string, Record<string, string>][]).map(([h, p]) => [h, { ...p }]);
    const search = router.match('GET', '/v1/memories/search');
    expect(names(search)).toEqual([
      ['mw', {}],
      ['search', {}],
      ['one', { id: 'search' }],
    ]);
    expect(names(router.match('GET', '/v1/memories/abc'))).toEqual([
      ['mw', {}],
      ['one', { id: 'abc' }],
    ]);
    expect(names(router.match('GET', '/v1/memories/def'))).toEqual([
      ['mw', {}],
      ['one', { id: 'def' }],
    ]);
    expect(names(router.match('GET', '/healthz'))).toEqual([['mw', {}]]);
    expect(router.match('GET', '/healthz')).toBe(router.match('GET', '/healthz'));
    router.add('GET', '/healthz', 'health'); // a late route empties the cache
    expect(names(router.match('GET', '/healthz'))).toEqual([
      ['mw', {}],
      ['health', {}],
    ]);
  });
});

describe('cheaper helpers', () => {
  it('draws base62 strings of the asked length from the whole alphabet', () => {
    const s = Array.from({ length: 300 }, () => randomBase62(43)).join('');
    expect(s).toMatch(/^[0-9A-Za-z]+$/);
    expect(s).toHaveLength(300 * 43);
    expect(new Set(s).size).toBe(62);
  });

  it('names the UTC day and month of any date, across day and month boundaries', () => {
    for (const iso of [
      '2026-01-31T23:59:59.999Z',
      '2026-02-01T00:00:00.000Z',
      '2026-01-31T12:00:00.000Z',
      '1969-12-31T23:00:00.000Z',
      '2026-12-31T23:59:59.999Z',
      '2027-01-01T00:00:00.000Z',
    ]) {
      const d = new Date(iso);
      expect([dayOf(d), periodOf(d)]).toEqual([iso.slice(0, 10), iso.slice(0, 7)]);
    }
    expect(() => dayOf(new Date(Number.NaN))).toThrow(RangeError);
  });
});
