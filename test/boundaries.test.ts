import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The house rules of docs/architecture.md#layers as a test: which folder may import which. Import
 * specifiers come from TypeScript's own scanner (`ts.preProcessFile`: static imports, `export ... from`, dynamic
 * `import()`, type-only imports too), relative ones are resolved to files, and every breach is
 * reported as `file: imports 'specifier' (resolved file): rule`.
 */

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '..');
const SCANNED = ['functions', 'shared', 'schema'];

/** Where Node-only code may live: the Node entry point and the adapters it wires in. */
const NODE_ONLY_HOMES = ['functions/node.ts', 'shared/node/'];
/** Families that are views on the others' verbs (docs/architecture.md#layers): they may import them. */
const SURFACES = new Set(['console']);
/** Packages, package subpaths and scopes (`@scope/*`) that only run on Node; builtins (`node:x` or bare) too. */
const NODE_ONLY_PACKAGES = [
  'pg',
  'pg-native',
  'ioredis',
  '@electric-sql/pglite',
  '@electric-sql/pglite-pgvector',
  '@hono/node-server',
  '@energetic-ai/*',
  'tsx',
  'undici',
  'ws',
  'drizzle-orm/node-postgres',
  'drizzle-orm/pglite',
  'drizzle-orm/postgres-js',
];
const builtins = new Set(builtinModules.filter((m) => !m.startsWith('_')));

interface Import {
  /** Repository-relative path of the importing file. */
  file: string;
  specifier: string;
  /** Repository-relative path of the imported file, for relative specifiers. */
  target?: string;
  /** Every import of this specifier in the file is `import type` (or names types only): no code crosses. */
  typeOnly?: boolean;
}

/** Every module specifier a file's text imports or re-exports, including `import()`. */
function specifiersOf(text: string): string[] {
  const info = ts.preProcessFile(text, true, true);
  return info.importedFiles.map((f) => f.fileName);
}

/** Specifiers that a file imports or re-exports for types only (`import type`, or every name `type`). */
function typeOnlySpecifiers(text: string): Set<string> {
  const source = ts.createSourceFile('x.ts', text, ts.ScriptTarget.Latest, false);
  const typeOnly = new Set<string>();
  const withCode = new Set<string>();
  for (const statement of source.statements) {
    if (!(ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement))) continue;
    const specifier = statement.moduleSpecifier;
    if (!specifier || !ts.isStringLiteral(specifier)) continue;
    let onlyTypes: boolean;
    if (ts.isImportDeclaration(statement)) {
      const clause = statement.importClause;
      const named = clause?.namedBindings;
      onlyTypes =
        !!clause &&
        (clause.isTypeOnly || (!clause.name && !!named && ts.isNamedImports(named) && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly)));
    } else {
      const named = statement.exportClause;
      onlyTypes = statement.isTypeOnly || (!!named && ts.isNamedExports(named) && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly));
    }
    (onlyTypes ? typeOnly : withCode).add(specifier.text);
  }
  for (const s of withCode) typeOnly.delete(s);
  return typeOnly;
}

/** The room of shared/platform a file lives in, lowest first (docs/architecture.md#layers), or null. */
const ROOMS = ['contract', 'data', 'limits', 'http'] as const;
const roomOf = (path: string) => {
  const room = /^shared\/platform\/([^/]+)\//.exec(path)?.[1];
  const rank = ROOMS.indexOf(room as (typeof ROOMS)[number]);
  return rank < 0 ? null : { room, rank };
};

const posix = (p: string) => p.split('\\').join('/');

/** A relative specifier as TypeScript's bundler resolution finds it: x.ts, x.tsx, x/index.ts, or .js → .ts. */
function resolveRelative(fromFile: string, specifier: string): string | undefined {
  const base = resolve(ROOT, dirname(fromFile), specifier);
  const candidates = [base, `${base}.ts`, `${base}.tsx`, base.replace(/\.(m|c)?js$/, '.$1ts'), join(base, 'index.ts'), join(base, 'index.tsx')];
  const hit = candidates.find((c) => existsSync(c) && statSync(c).isFile());
  return hit && posix(relative(ROOT, hit));
}

function tsFiles(dir: string): string[] {
  return (readdirSync(resolve(ROOT, dir), { recursive: true }) as string[])
    .map((f) => posix(join(dir, f)))
    .filter((f) => /\.tsx?$/.test(f) && !f.endsWith('.d.ts') && statSync(resolve(ROOT, f)).isFile())
    .sort();
}

function scan(): { files: string[]; imports: Import[]; unresolved: string[] } {
  const files = SCANNED.flatMap(tsFiles);
  const imports: Import[] = [];
  const unresolved: string[] = [];
  for (const file of files) {
    const text = readFileSync(resolve(ROOT, file), 'utf8');
    const typeOnly = typeOnlySpecifiers(text);
    for (const specifier of specifiersOf(text)) {
      if (!specifier.startsWith('.')) {
        imports.push({ file, specifier });
        continue;
      }
      const target = resolveRelative(file, specifier);
      if (target) imports.push({ file, specifier, target, ...(typeOnly.has(specifier) ? { typeOnly: true } : {}) });
      else unresolved.push(`${file}: imports '${specifier}', which resolves to no file`);
    }
  }
  return { files, imports, unresolved };
}

/** `memories` for functions/memories/..., null for the root files of functions/ and anything else. */
const familyOf = (path: string) => /^functions\/([^/]+)\//.exec(path)?.[1] ?? null;
const isRootFile = (path: string) => /^functions\/[^/]+\.tsx?$/.test(path);

/** The npm package a bare specifier names: `@scope/name` or `name`, without the subpath. */
const packageOf = (specifier: string) =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');

function isNodeOnly(specifier: string): boolean {
  if (specifier.startsWith('node:') || builtins.has(packageOf(specifier))) return true;
  return NODE_ONLY_PACKAGES.some((p) => (p.endsWith('/*') ? specifier.startsWith(p.slice(0, -1)) : specifier === p || specifier.startsWith(`${p}/`)));
}

const describeImport = (i: Import) => `${i.file}: imports '${i.specifier}'${i.target ? ` (${i.target})` : ''}`;

/** Every breach of the house rules among these imports, one readable line each. */
function violations(imports: Import[]): string[] {
  const out: string[] = [];
  for (const i of imports) {
    const from = familyOf(i.file);
    const to = i.target && familyOf(i.target);
    // 1. Families never import each other, nor the root files that assemble them. A surface (the
    //    console) is a view on the other families' verbs and may import them; none imports it.
    if (from && to && from !== to && !SURFACES.has(from)) {
      out.push(`${describeImport(i)}: family '${from}' must not import family '${to}'; move what both need to shared/`);
    }
    if (from && i.target && isRootFile(i.target)) {
      out.push(`${describeImport(i)}: family '${from}' must not import the root file ${i.target}`);
    }
    // 2. The root files see a family only through its index.ts (its manifest).
    if (isRootFile(i.file) && to && i.target !== `functions/${to}/index.ts` && i.target !== `functions/${to}/index.tsx`) {
      out.push(`${describeImport(i)}: a root file may import family '${to}' only through functions/${to}/index.ts`);
    }
    // 3. shared/ never imports functions/.
    if (i.file.startsWith('shared/') && i.target?.startsWith('functions/')) {
      out.push(`${describeImport(i)}: shared/ must not import functions/`);
    }
    // 4. schema/ holds drizzle tables only: drizzle and other schema files.
    if (i.file.startsWith('schema/')) {
      const allowed = i.target ? i.target.startsWith('schema/') : packageOf(i.specifier) === 'drizzle-orm';
      if (!allowed) out.push(`${describeImport(i)}: schema/ may import only drizzle-orm and other schema/ files`);
    }
    // 6. The rooms of shared/platform import downwards: contract <- data <- limits <- http. Types may cross.
    const fromRoom = roomOf(i.file);
    const toRoom = i.target ? roomOf(i.target) : null;
    if (fromRoom && toRoom && toRoom.rank > fromRoom.rank && !i.typeOnly) {
      out.push(`${describeImport(i)}: shared/platform/${fromRoom.room} must not import shared/platform/${toRoom.room} (the rooms import downwards)`);
    }
    if (i.file.startsWith('shared/platform/') && !fromRoom) {
      out.push(`${describeImport(i)}: every file of shared/platform lives in a room (${ROOMS.join(', ')})`);
    }
    // 5. Node-only modules stay in functions/node.ts and shared/node/, so the worker bundle never pulls them.
    if (!i.target && isNodeOnly(i.specifier) && !NODE_ONLY_HOMES.some((home) => i.file === home || i.file.startsWith(home))) {
      out.push(`${describeImport(i)}: Node-only module outside functions/node.ts and shared/node/`);
    }
  }
  return out;
}

describe('import boundaries (docs/architecture.md#layers)', () => {
  const { files, imports, unresolved } = scan();

  it('the scanner sees every form of import', () => {
    const text = [
      "import a from './a';",
      "import type { B } from './b';",
      "export { c } from './c';",
      "export * from './d';",
      "const e = await import('./e');",
      "// import f from './not-an-import';",
      'const g = \'import h from "./not-either"\';',
    ].join('\n');
    expect(specifiersOf(text)).toEqual(['./a', './b', './c', './d', './e']);
    expect(files.length).toBeGreaterThan(50);
    expect(imports).toContainEqual({ file: 'functions/app.ts', specifier: './families', target: 'functions/families.ts' });
  });

  it('every relative import resolves to a file', () => {
    expect(unresolved).toEqual([]);
  });

  it('the rules catch each kind of breach', () => {
    const breaches: Import[] = [
      { file: 'functions/rollback/service.ts', specifier: '../memories/queries', target: 'functions/memories/queries/index.ts' },
      { file: 'functions/memories/service.ts', specifier: '../registry', target: 'functions/registry.ts' },
      { file: 'functions/app.ts', specifier: './memories/routes', target: 'functions/memories/routes.ts' },
      { file: 'shared/platform/http/auth.ts', specifier: '../../functions/keys', target: 'functions/keys/index.ts' },
      { file: 'schema/memories.ts', specifier: '../shared/platform/contract/ids', target: 'shared/platform/contract/ids.ts' },
      { file: 'schema/memories.ts', specifier: 'zod' },
      { file: 'shared/platform/contract/crypto.ts', specifier: 'node:crypto' },
      { file: 'functions/worker.ts', specifier: 'fs' },
      { file: 'shared/memory/embeddings.ts', specifier: '@energetic-ai/embeddings' },
      { file: 'shared/platform/data/db.ts', specifier: 'drizzle-orm/node-postgres' },
      { file: 'shared/platform/contract/errors.ts', specifier: '../data/db', target: 'shared/platform/data/db.ts' },
      { file: 'shared/platform/data/usage.ts', specifier: '../http/app', target: 'shared/platform/http/app.ts' },
      { file: 'shared/platform/stray.ts', specifier: './contract/errors', target: 'shared/platform/contract/errors.ts' },
    ];
    expect(breaches.map((b) => violations([b]).length)).toEqual(breaches.map(() => 1));
    const allowed: Import[] = [
      { file: 'functions/app.ts', specifier: './memories', target: 'functions/memories/index.ts' },
      { file: 'functions/worker.ts', specifier: './internal', target: 'functions/internal/index.ts' },
      { file: 'functions/memories/index.ts', specifier: './routes', target: 'functions/memories/routes.ts' },
      { file: 'schema/index.ts', specifier: './memories', target: 'schema/memories.ts' },
      { file: 'schema/memories.ts', specifier: 'drizzle-orm/pg-core' },
      { file: 'shared/node/database.ts', specifier: '@electric-sql/pglite' },
      { file: 'functions/node.ts', specifier: '@hono/node-server' },
      { file: 'shared/platform/data/db.ts', specifier: 'drizzle-orm/pg-core' },
      { file: 'functions/worker.ts', specifier: '@neondatabase/serverless' },
      { file: 'shared/platform/http/app.ts', specifier: '../data/db', target: 'shared/platform/data/db.ts' },
      { file: 'shared/platform/contract/context.ts', specifier: '../data/db', target: 'shared/platform/data/db.ts', typeOnly: true },
    ];
    expect(violations(allowed)).toEqual([]);
  });

  it('functions/, shared/ and schema/ keep the house rules', () => {
    expect(violations(imports), 'import boundary violations (docs/architecture.md#layers)').toEqual([]);
  });
});
