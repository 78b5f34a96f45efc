import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { GENERATED_PATH, generatedTypes } from '../../sdk/scripts/generate';

/** The package itself: its generated types follow the OpenAPI snapshot, and its client stays runtime-neutral. */
const sdk = new URL('../../sdk/', import.meta.url).pathname;

/** What the `engram` CLI needs besides the client: cli/package.json's, never the client's (installing the SDK installs no CLI). */
const CLI_DEPENDENCIES = ['@modelcontextprotocol/client', '@modelcontextprotocol/server', 'commander', 'picocolors'];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory()) return e.name === 'generated' ? [] : sources(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

describe('engram-sdk package', () => {
  it('has generated types current with test/openapi.snapshot.json (npm run sdk:generate)', async () => {
    expect(readFileSync(GENERATED_PATH, 'utf8') === (await generatedTypes()), 'sdk/src/generated/openapi.ts is stale: run `npm run sdk:generate`').toBe(true);
  });

  it('imports nothing Node-only in the client, depends on nothing but eventsource-parser and canonicalize, and has no bin (the CLI is engram-cli)', () => {
    const files = sources(`${sdk}src`);
    expect(files.length).toBeGreaterThan(5);
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      // Node globals (process, Buffer) are caught by `tsc -p sdk`, which builds without Node's types.
      expect(text, file).not.toMatch(/from ['"]node:|import\(['"]node:|\brequire\(/);
      // The CLI's dependencies are cli/'s; the client never loads them.
      expect(text, file).not.toMatch(new RegExp(`from ['"](${CLI_DEPENDENCIES.join('|')})`));
    }
    const pkg = JSON.parse(readFileSync(`${sdk}package.json`, 'utf8'));
    expect(Object.keys(pkg.dependencies ?? {}).sort()).toEqual(['canonicalize', 'eventsource-parser']);
    expect(pkg).toMatchObject({ name: 'engram-sdk', type: 'module', license: 'Apache-2.0' });
    expect(pkg.bin).toBeUndefined();
  });
});
