/**
 * `npm run build -w engram-sdk` (and `prepack`): the package as it is published.
 * - dist/esm/index.js and dist/cjs/index.js: the client bundled by esbuild for `import` and
 *   `require`, its small dependencies (canonicalize, eventsource-parser, standardwebhooks) inside,
 *   so installing the client installs nothing else;
 * - dist/esm/*.d.ts, and the same files in dist/cjs (a `{"type":"commonjs"}` folder, so TypeScript
 *   reads them as CommonJS types for `require`);
 * - LICENSE: the repository's, beside package.json.
 * Types are checked by tsc first (the declarations are tsc's; the code is esbuild's).
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type BuildOptions, build } from 'esbuild';

const sdk = new URL('..', import.meta.url).pathname;
const dist = `${sdk}dist`;
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

rmSync(dist, { recursive: true, force: true });
execFileSync(process.execPath, [tsc, '-p', sdk, '--emitDeclarationOnly', '--outDir', `${dist}/esm`], { stdio: 'inherit' });

const client: BuildOptions = {
  entryPoints: [`${sdk}src/index.ts`],
  bundle: true,
  platform: 'neutral',
  mainFields: ['module', 'main'],
  target: 'es2022',
  legalComments: 'inline',
  logLevel: 'warning',
};
await build({ ...client, format: 'esm', outfile: `${dist}/esm/index.js` });
await build({ ...client, format: 'cjs', outfile: `${dist}/cjs/index.js` });
cpSync(`${dist}/esm`, `${dist}/cjs`, { recursive: true, filter: (src) => !src.endsWith('.js') });
writeFileSync(`${dist}/cjs/package.json`, '{ "type": "commonjs" }\n');

copyFileSync(`${sdk}../LICENSE`, `${sdk}LICENSE`);
console.log('built sdk/dist (esm, cjs, types) and sdk/LICENSE');
