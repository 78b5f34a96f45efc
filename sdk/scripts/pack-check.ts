/**
 * `npm run sdk:pack-check` (.ci/run): the package as a user gets it. Builds and packs sdk/, runs publint and @arethetypeswrong/cli on the tarball, then installs the tarball into a
 * fresh CommonJS project and a fresh ESM project (its dependencies from the registry) and in each
 * loads it (`require` / `import`) and type-checks a small TypeScript file against it (NodeNext,
 * strict). Exits 1 on the first failure. `--sizes` also prints the install size of the tarball
 * beside `openai` and `stripe` installed the same way (for the docs; needs the registry).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('../..', import.meta.url).pathname;
const sdk = join(root, 'sdk');
const bin = (name: string) => join(root, 'node_modules/.bin', name);
const tsc = join(root, 'node_modules/typescript/bin/tsc');
const run = (cmd: string, args: string[], cwd: string) => execFileSync(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
const npm = (args: string[], cwd: string) => run('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], cwd);

const work = mkdtempSync(join(tmpdir(), 'engram-sdk-pack-'));
try {
  console.log(npm(['run', 'build'], sdk).trim()); // what `prepack` runs; its output is not part of `npm pack --json`
  const tarball = join(work, JSON.parse(npm(['pack', '--json', '--ignore-scripts', '--pack-destination', work], sdk))[0].filename);
  console.log(`packed ${tarball}`);

  const files = run('tar', ['-tzf', tarball], work).split('\n');
  for (const needed of ['package/LICENSE', 'package/README.md', 'package/dist/esm/index.js', 'package/dist/cjs/index.js', 'package/dist/cjs/index.d.ts']) {
    if (!files.includes(needed)) throw new Error(`the tarball has no ${needed}`);
  }

  console.log(run(bin('publint'), ['run', tarball, '--strict'], work));
  // `--profile node16`: Node's own resolution (ESM and CommonJS); the client is not a bundler-only package.
  console.log(run(bin('attw'), [tarball, '--profile', 'node16', '--format', 'table-flipped'], work));

  const project = (type: 'commonjs' | 'module') => {
    const dir = join(work, type);
    run('mkdir', ['-p', dir], work);
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `try-${type}`, private: true, type }));
    npm(['install', tarball, 'typescript@5', '@types/node@22'], dir);
    return dir;
  };

  const usage = `const client = new Engram({ apiKey: 'k', baseUrl: 'http://localhost:8787' });
const check = async (): Promise<string | undefined> => {
  try {
    const { data, requestId } = await client.memories.store({ observation: 'typed' }).withResponse();
    return data.id + requestId;
  } catch (err) {
    if (err instanceof NotFoundError) return err.code;
  }
};
void check;
export const version: string = VERSION;
`;
  const tsconfig = {
    compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', strict: true, noEmit: true, skipLibCheck: false, types: ['node'] },
  };

  const cjs = project('commonjs');
  const loaded = run(
    process.execPath,
    [
      '-e',
      "const s = require('engram-sdk'); console.log(typeof s.Engram, s.VERSION, new s.NotFoundError({status:404,code:'NOT_FOUND',message:'x'}) instanceof s.EngramError)",
    ],
    cjs,
  );
  if (loaded.trim() !== `function ${JSON.parse(readFileSync(join(sdk, 'package.json'), 'utf8')).version} true`)
    throw new Error(`require('engram-sdk') gave: ${loaded}`);
  writeFileSync(join(cjs, 'index.ts'), `import { Engram, NotFoundError, VERSION } from 'engram-sdk';\n${usage}`);
  writeFileSync(join(cjs, 'tsconfig.json'), JSON.stringify({ ...tsconfig, files: ['index.ts'] }));
  run(process.execPath, [tsc, '-p', cjs], cjs);
  console.log(`CommonJS project: require('engram-sdk') loads (${loaded.trim()}), index.ts type-checks`);

  const esm = project('module');
  const imported = run(
    process.execPath,
    ['--input-type=module', '-e', "const s = await import('engram-sdk'); console.log(typeof s.Engram, typeof s.unwrapWebhook)"],
    esm,
  );
  if (imported.trim() !== 'function function') throw new Error(`import('engram-sdk') gave: ${imported}`);
  writeFileSync(join(esm, 'index.ts'), `import { Engram, NotFoundError, VERSION } from 'engram-sdk';\n${usage}`);
  writeFileSync(join(esm, 'tsconfig.json'), JSON.stringify({ ...tsconfig, files: ['index.ts'] }));
  run(process.execPath, [tsc, '-p', esm], esm);
  console.log(`ESM project: import('engram-sdk') loads, index.ts type-checks`);

  if (process.argv.includes('--sizes')) {
    const size = (dir: string): number =>
      readdirSync(dir, { withFileTypes: true }).reduce((sum, e) => {
        const path = join(dir, e.name);
        return sum + (e.isDirectory() ? size(path) : e.isFile() ? statSync(path).size : 0);
      }, 0);
    for (const [name, spec] of [
      ['engram-sdk', tarball],
      ['openai', 'openai'],
      ['stripe', 'stripe'],
    ]) {
      const dir = join(work, `size-${name}`);
      run('mkdir', ['-p', dir], work);
      writeFileSync(join(dir, 'package.json'), '{"private":true}');
      npm(['install', spec!], dir);
      const lock = JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
      const packages = Object.keys(lock.packages).filter((p) => p.startsWith('node_modules/')).length;
      console.log(`${name}: ${packages} packages, ${(size(join(dir, 'node_modules')) / 1e6).toFixed(2)} MB installed`);
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
