import { readFileSync } from 'node:fs';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

const root = new URL('..', import.meta.url).pathname;
const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(`${root}package-lock.json`, 'utf8')) as {
  packages: Record<string, { version?: string; dev?: boolean; engines?: { node?: string } | string[] }>;
};

describe('supported Node version', () => {
  it('every runtime package (the lockfile without dev-only ones) accepts the oldest Node we support', () => {
    const oldest = semver.minVersion(pkg.engines.node)!.version;
    const refusing = Object.entries(lock.packages)
      .filter(([path, p]) => path !== '' && !p.dev)
      .map(([path, p]) => ({ name: `${path.replace(/^.*node_modules\//, '')}@${p.version}`, node: Array.isArray(p.engines) ? undefined : p.engines?.node }))
      .filter((p) => p.node && !semver.satisfies(oldest, p.node))
      .map((p) => `${p.name} wants node ${p.node}`);
    expect(refusing).toEqual([]);
  });
});
