import { describe, expect, it } from 'vitest';
import { Coalescer } from '../shared/platform/limits/coalesce';

/** A run that records what it was given and ends when the test says so. */
function recorder() {
  const runs: { items: string[]; end: (fail?: Error) => void }[] = [];
  const run = (items: string[]) =>
    new Promise<string[]>((resolve, reject) => {
      runs.push({ items, end: (fail) => (fail ? reject(fail) : resolve(items.map((i) => `done ${i}`))) });
    });
  return { runs, run };
}
const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('Coalescer', () => {
  it('runs the first callers of a key at once, alone; later ones wait and run together, in order', async () => {
    const { runs, run } = recorder();
    const c = new Coalescer(run, { max: 3, parallel: 2 });
    const results = ['a', 'b', 'c', 'd', 'e', 'f'].map((x) => c.submit('k', x));
    await tick();
    expect(runs.map((r) => r.items)).toEqual([['a'], ['b']]);
    runs[1].end();
    await tick();
    expect(runs.map((r) => r.items)).toEqual([['a'], ['b'], ['c', 'd', 'e']]);
    runs[0].end();
    await tick();
    expect(runs[3].items).toEqual(['f']);
    runs[2].end();
    runs[3].end();
    expect(await Promise.all(results)).toEqual(['done a', 'done b', 'done c', 'done d', 'done e', 'done f']);
    // The key is free again: the next caller runs at once.
    void c.submit('k', 'g');
    await tick();
    expect(runs[4].items).toEqual(['g']);
  });

  it('keeps keys apart, and fails only the items of a run that failed', async () => {
    const { runs, run } = recorder();
    const c = new Coalescer(run, { max: 10, parallel: 1 });
    const a1 = c.submit('a', 'a1');
    const b1 = c.submit('b', 'b1');
    const a2 = c.submit('a', 'a2');
    const a3 = c.submit('a', 'a3');
    await tick();
    expect(runs.map((r) => r.items)).toEqual([['a1'], ['b1']]);
    runs[0].end(new Error('boom'));
    await expect(a1).rejects.toThrow('boom');
    await tick();
    expect(runs[2].items).toEqual(['a2', 'a3']);
    runs[2].end();
    runs[1].end();
    expect(await Promise.all([a2, a3, b1])).toEqual(['done a2', 'done a3', 'done b1']);
  });
});
