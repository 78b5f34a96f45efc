import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { anchorsOf } from './markdown';

/**
 * Every repository path a code comment cites (`shared/...`, `functions/...`, `test/...`,
 * `docs/<page>.md#<anchor>`, `migrations/0006`) names a file or folder that exists, and an anchor a
 * heading of that document: a comment that sends the reader to a moved file is worse than none.
 * Comments are read with TypeScript's parser (so a path in a string or a regex is not one) and, in
 * SQL, as `--` and block comments.
 */
const root = resolve(new URL('..', import.meta.url).pathname);
const SCANNED = ['functions', 'shared', 'schema', 'migrations', 'sdk/src', 'sdk/scripts', 'sdk/example', 'cli/src', 'integrations', 'test'];
const SKIPPED = new Set(['node_modules', 'dist', 'screenshots']);

/**
 * Applied migrations are checksummed (shared/node/migrate.ts refuses one that changed), so their
 * comments keep the paths of the day they were written; here is where each of those went since.
 */
const MOVED_SINCE_A_MIGRATION: Record<string, string> = {
  'shared/vector-index.ts': 'shared/memory/vector-index.ts',
  'shared/memory-events.ts': 'shared/memory/events.ts',
  'functions/memories/queries.ts': 'functions/memories/queries',
};

const PATH = /(?<![\w./@~-])((?:functions|shared|schema|migrations|sdk|cli|integrations|test|docs)\/[\w./-]*\w)(?:#([\w-]+))?/g;

function sourceFiles(dir: string): string[] {
  if (!existsSync(join(root, dir))) return [];
  return readdirSync(join(root, dir))
    .filter((name) => !SKIPPED.has(name))
    .flatMap((name) => {
      const path = `${dir}/${name}`;
      if (statSync(join(root, path)).isDirectory()) return sourceFiles(path);
      return /\.(tsx?|sql)$/.test(name) ? [path] : [];
    });
}

/** The comments of a source file, each with the offset it starts at. */
function commentsOf(text: string, file: string): { text: string; at: number }[] {
  if (file.endsWith('.sql')) return [...text.matchAll(/--[^\n]*|\/\*[\s\S]*?\*\//g)].map((m) => ({ text: m[0], at: m.index }));
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const found = new Map<number, string>();
  const add = (ranges: ts.CommentRange[] | undefined) => {
    for (const r of ranges ?? []) found.set(r.pos, text.slice(r.pos, r.end));
  };
  const visit = (node: ts.Node) => {
    add(ts.getLeadingCommentRanges(text, node.pos));
    add(ts.getTrailingCommentRanges(text, node.end));
    for (const child of node.getChildren(source)) visit(child);
  };
  visit(source);
  return [...found].sort(([a], [b]) => a - b).map(([at, comment]) => ({ text: comment, at }));
}

const ignoredByGit = readFileSync(join(root, '.gitignore'), 'utf8')
  .split('\n')
  .map((line) => line.trim().replace(/\/$/, ''))
  .filter(Boolean);

/** Whether a cited path names something: the file, the file with its extension left off, a folder, a migration by number, or a git-ignored output. */
function exists(path: string): boolean {
  if (['', '.ts', '.tsx', '/index.ts'].some((ext) => existsSync(join(root, path + ext)))) return true;
  const migration = /^migrations\/(\d{4})$/.exec(path);
  if (migration) return readdirSync(join(root, 'migrations')).some((f) => f.startsWith(`${migration[1]}_`));
  return ignoredByGit.includes(path);
}

/** What is wrong with each path the comments of `file` cite (none: []). */
function stalePaths(file: string, text: string): string[] {
  const stale: string[] = [];
  for (const comment of commentsOf(text, file)) {
    for (const m of comment.text.matchAll(PATH)) {
      const [cited, path, anchor] = m;
      const line = text.slice(0, comment.at + m.index).split('\n').length;
      const where = `${file}:${line} cites ${cited}`;
      const target = file.startsWith('migrations/') ? (MOVED_SINCE_A_MIGRATION[path] ?? path) : path;
      if (!exists(target)) stale.push(`${where}: ${target} does not exist`);
      else if (anchor && target.endsWith('.md') && !anchorsOf(readFileSync(join(root, target), 'utf8')).has(anchor))
        stale.push(`${where}: no heading of ${target} has the anchor #${anchor}`);
    }
  }
  return stale;
}

describe('paths cited in code comments', () => {
  const files = SCANNED.flatMap(sourceFiles);

  it('finds the sources', () => {
    expect(files).toContain('shared/platform/http/app.ts');
    expect(files).toContain('migrations/0006_deferred_vector_index.sql');
    expect(files).toContain('sdk/src/index.ts');
  });

  it.each(SCANNED)('every path cited in a comment under %s/ exists', (dir) => {
    const stale = files.filter((f) => f === dir || f.startsWith(`${dir}/`)).flatMap((f) => stalePaths(f, readFileSync(join(root, f), 'utf8')));
    expect(stale).toEqual([]);
  });

  it('what an applied migration cites and has moved since is where the list says', () => {
    for (const [was, now] of Object.entries(MOVED_SINCE_A_MIGRATION)) {
      expect(exists(was), was).toBe(false);
      expect(exists(now), now).toBe(true);
    }
  });

  it('reads comments, not strings or regexes, and names the file, line and what is missing', () => {
    // Built in two parts, so the repository's own check of architecture anchors does not read it as a citation.
    const missing = `${'docs/architecture'}.md#no-such-heading`;
    const text = [
      "const a = '// shared/nowhere.ts'; const r = /docs\\/x/;",
      '/** See shared/platform/http/app.ts and shared/gone.ts. */',
      `// docs/architecture.md#layers, ${missing}; migrations/0006, migrations/9999`,
      'const b = 1; // functions/ghost/routes.ts',
      '// test/browser/screenshots/ and node_modules/shared/x.ts are fine',
    ].join('\n');
    expect(stalePaths('shared/example.ts', text)).toEqual([
      'shared/example.ts:2 cites shared/gone.ts: shared/gone.ts does not exist',
      `shared/example.ts:3 cites ${missing}: no heading of docs/architecture.md has the anchor #no-such-heading`,
      'shared/example.ts:3 cites migrations/9999: migrations/9999 does not exist',
      'shared/example.ts:4 cites functions/ghost/routes.ts: functions/ghost/routes.ts does not exist',
    ]);
    expect(stalePaths('migrations/0001_x.sql', '-- shared/vector-index.ts\nSELECT 1; /* shared/gone.ts */')).toEqual([
      'migrations/0001_x.sql:2 cites shared/gone.ts: shared/gone.ts does not exist',
    ]);
  });
});
