/** Small helpers the benchmark scripts share. */
import { readdir, readFile } from 'node:fs/promises';

/** Deterministic numbers in [0, 1) (mulberry32), so every run loads the same data. */
export function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Nearest-rank percentile. */
export const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.max(0, Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1))];
};
export const f0 = (x: number) => x.toFixed(0);
export const f1 = (x: number) => x.toFixed(1);
export const f2 = (x: number) => x.toFixed(2);

/** A markdown table. */
export function table(header: string[], body: string[][]) {
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...body.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

export async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const out = await fn();
  return [out, performance.now() - t0];
}

/** Runs `fn` over `items` with `n` at a time. */
export async function pool<T>(items: T[], n: number, fn: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
}

/** An index exactly as the migrations define it (the last CREATE INDEX of that name wins). */
export async function indexDefinition(index: string) {
  const dir = new URL('../../migrations/', import.meta.url);
  const files = (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
  const found = (await Promise.all(files.map((f) => readFile(new URL(f, dir), 'utf8')))).flatMap((text) => text.match(new RegExp(`CREATE INDEX ${index} [^;]*;`, 'g')) ?? []);
  if (!found.length) throw new Error(`${index} not found in migrations/`);
  return found[found.length - 1];
}
