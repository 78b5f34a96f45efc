import { readdirSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/** The `engram-cli` package: its own bin and dependencies, and the client reached only as the package `engram-sdk`. */
const cli = new URL('../../cli/', import.meta.url).pathname;
const root = new URL('../../', import.meta.url).pathname;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory()) return sources(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

describe('engram-cli package', () => {
  it('is the bin `engram` with the CLI-only dependencies, in the npm workspace', () => {
    const pkg = JSON.parse(readFileSync(`${cli}package.json`, 'utf8'));
    expect(pkg).toMatchObject({ name: 'engram-cli', type: 'module', license: 'Apache-2.0', bin: { engram: './dist/main.js' }, engines: { node: '>=20' } });
    expect(pkg.files).toEqual(expect.arrayContaining(['dist', 'README.md', 'LICENSE']));
    expect(Object.keys(pkg.dependencies).sort()).toEqual([
      '@modelcontextprotocol/client',
      '@modelcontextprotocol/server',
      'commander',
      'engram-sdk',
      'picocolors',
    ]);
    const workspace = JSON.parse(readFileSync(`${root}package.json`, 'utf8'));
    expect(workspace.workspaces).toEqual(expect.arrayContaining(['sdk', 'cli']));
  });

  it('imports the client only through its public entry `engram-sdk`, never sdk/ paths', () => {
    const files = sources(`${cli}src`);
    expect(files.length).toBeGreaterThan(10);
    for (const file of files) {
      const specifiers = [...readFileSync(file, 'utf8').matchAll(/(?:from|import\()\s*['"]([^'"]+)['"]/g)].map((m) => m[1]);
      for (const specifier of specifiers) {
        expect(specifier, file).not.toMatch(/^engram-sdk\/|(^|\/)sdk\//);
        // A relative import stays inside cli/src: the client is the package, as an installed CLI sees it.
        if (specifier.startsWith('.')) expect(resolve(dirname(file), specifier).startsWith(`${cli}src/`), `${file}: ${specifier}`).toBe(true);
      }
    }
  });
});
