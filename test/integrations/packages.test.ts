import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/**
 * The adapter packages in integrations/: each in the npm workspace, its framework a peer (the app
 * brings its own), engram-sdk its one dependency, reached only through its public entry.
 */
const root = new URL('../../', import.meta.url).pathname;
const adapters = [
  { dir: 'integrations/langgraph', name: 'engram-langgraph', peer: '@langchain/langgraph', node: '>=20' },
  { dir: 'integrations/ai-sdk', name: 'engram-ai-sdk', peer: 'ai', node: '>=22' },
  { dir: 'integrations/openai-agents', name: 'engram-openai-agents', peer: '@openai/agents', node: '>=20' },
];

describe('adapter packages', () => {
  it('are every folder of integrations/, each an npm workspace', () => {
    const folders = readdirSync(`${root}integrations`, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => `integrations/${e.name}`);
    expect(folders.sort()).toEqual(adapters.map((a) => a.dir).sort());
    const workspace = JSON.parse(readFileSync(`${root}package.json`, 'utf8'));
    expect(workspace.workspaces).toEqual(expect.arrayContaining(adapters.map((a) => a.dir)));
  });

  for (const a of adapters) {
    it(`${a.name}: ESM with types in dist, the framework a peer, engram-sdk its one dependency, a README`, () => {
      const pkg = JSON.parse(readFileSync(`${root}${a.dir}/package.json`, 'utf8'));
      expect(pkg).toMatchObject({ name: a.name, type: 'module', license: 'Apache-2.0', engines: { node: a.node }, types: './dist/index.d.ts' });
      expect(pkg.exports['.']).toEqual({ types: './dist/index.d.ts', default: './dist/index.js' });
      expect(pkg.files).toEqual(expect.arrayContaining(['dist', 'README.md', 'LICENSE']));
      expect(Object.keys(pkg.dependencies)).toEqual(['engram-sdk']);
      expect(Object.keys(pkg.peerDependencies)).toEqual([a.peer]);
      expect(Object.keys(pkg.devDependencies)).toEqual([a.peer]);
      expect(readFileSync(`${root}${a.dir}/README.md`, 'utf8')).toContain('## What is stored where');
    });

    it(`${a.name}: its source imports only engram-sdk's public entry and its framework`, () => {
      const src = readFileSync(`${root}${a.dir}/src/index.ts`, 'utf8');
      const specifiers = [...src.matchAll(/(?:from|import\()\s*['"]([^'"]+)['"]/g)].map((m) => m[1]);
      expect(new Set(specifiers)).toEqual(new Set(['engram-sdk', a.peer]));
    });
  }
});
