import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { GENERATED_PATH, generatedOperations, generatedTypes, OPERATIONS_PATH } from '../../sdk/scripts/generate';
import { VERSION } from '../../sdk/src/generated/version';

/** The package itself: its generated types follow the OpenAPI snapshot, and its client stays runtime-neutral. */
const sdk = new URL('../../sdk/', import.meta.url).pathname;

/** What the `engram` CLI needs besides the client: cli/package.json's, never the client's (installing the SDK installs no CLI). */
const CLI_DEPENDENCIES = ['@modelcontextprotocol/client', '@modelcontextprotocol/server', 'commander', 'picocolors'];
/** What the client needs; bundled into dist/esm and dist/cjs by sdk/scripts/build.ts. */
const CLIENT_DEPENDENCIES = ['canonicalize', 'eventsource-parser', 'standardwebhooks'];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory()) return e.name === 'generated' ? [] : sources(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

describe('engram-sdk package', () => {
  it('has generated types and operations current with test/openapi.snapshot.json (npm run sdk:generate)', async () => {
    expect(readFileSync(GENERATED_PATH, 'utf8') === (await generatedTypes()), 'sdk/src/generated/openapi.ts is stale: run `npm run sdk:generate`').toBe(true);
    expect(readFileSync(OPERATIONS_PATH, 'utf8') === generatedOperations(), 'sdk/src/generated/operations.ts is stale: run `npm run sdk:generate`').toBe(true);
  });

  it('imports nothing Node-only in the client, installs no dependency (the client bundles its own) and has no bin (the CLI is engram-cli)', () => {
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
    expect(pkg.dependencies ?? {}).toEqual({});
    expect(Object.keys(pkg.devDependencies).sort()).toEqual([...CLIENT_DEPENDENCIES].sort());
    expect(pkg.bin).toBeUndefined();
    expect(pkg).toMatchObject({
      name: 'engram-sdk',
      type: 'module',
      license: 'Apache-2.0',
      sideEffects: false,
      exports: {
        '.': {
          import: { types: './dist/esm/index.d.ts', default: './dist/esm/index.js' },
          require: { types: './dist/cjs/index.d.ts', default: './dist/cjs/index.js' },
        },
      },
    });
    expect(pkg.files).toContain('LICENSE');
    expect(readFileSync(`${sdk}LICENSE`, 'utf8')).toBe(readFileSync(`${sdk}../LICENSE`, 'utf8'));
  });

  it('sends the version of sdk/package.json in its User-Agent (sdk/src/generated/version.ts)', () => {
    expect(VERSION).toBe(JSON.parse(readFileSync(`${sdk}package.json`, 'utf8')).version);
  });
});
