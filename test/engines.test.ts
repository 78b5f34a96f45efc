import { readFileSync } from 'node:fs';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

const root = new URL('..', import.meta.url).pathname;
const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { engines: { node: string } };
type Entry = {
  version?: string;
  dev?: boolean;
  engines?: { node?: string } | string[];
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
};
const lock = JSON.parse(readFileSync(`${root}package-lock.json`, 'utf8')) as { packages: Record<string, Entry> };
const nodeOf = (p: Entry) => (Array.isArray(p.engines) ? undefined : p.engines?.node);
const oldest = semver.minVersion(pkg.engines.node)!.version;
/** Workspace packages (sdk, cli, integrations/*): lockfile entries that are folders of this repository. */
const workspaces = Object.entries(lock.packages).filter(([path]) => path !== '' && !path.includes('node_modules/'));

describe('supported Node version', () => {
  it('every runtime package (the lockfile without dev-only ones and workspaces) accepts the oldest Node we support', () => {
    const refusing = Object.entries(lock.packages)
      .filter(([path, p]) => path.includes('node_modules/') && !p.dev)
      .map(([path, p]) => ({ name: `${path.replace(/^.*node_modules\//, '')}@${p.version}`, node: nodeOf(p) }))
      .filter((p) => p.node && !semver.satisfies(oldest, p.node))
      .map((p) => `${p.name} wants node ${p.node}`);
    expect(refusing).toEqual([]);
  });

  it('a workspace package that needs a newer Node says so in engines, and its suite runs on Node 22 in CI', () => {
    const node22Suites = readFileSync(`${root}test/vitest.node22.config.ts`, 'utf8');
    for (const [path, p] of workspaces) {
      const node = nodeOf(p);
      expect(node, `${path} declares engines.node`).toBeTruthy();
      if (semver.satisfies(oldest, node!)) continue;
      expect(semver.minVersion(node!)!.major, `${path} needs at most the Node CI also runs (22)`).toBe(22);
      expect(node22Suites, `${path}'s tests run on Node 22 (test/vitest.node22.config.ts)`).toContain(`${path}/`);
    }
  });

  it("each workspace package's runtime and peer dependencies accept that package's own oldest Node", () => {
    const refusing: string[] = [];
    for (const [path, p] of workspaces) {
      const own = semver.minVersion(nodeOf(p)!)!.version;
      for (const name of Object.keys({ ...p.dependencies, ...p.peerDependencies })) {
        const dep = lock.packages[`${path}/node_modules/${name}`] ?? lock.packages[`node_modules/${name}`];
        expect(dep, `${path}: ${name} is in the lockfile`).toBeTruthy();
        const node = nodeOf(dep);
        if (node && !semver.satisfies(own, node)) refusing.push(`${path} (node ${own}): ${name}@${dep.version} wants node ${node}`);
      }
    }
    expect(refusing).toEqual([]);
  });
});
