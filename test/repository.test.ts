import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, posix, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The repository stands on its own: no tracked file points at material outside it (a reference
 * folder beside the checkout, a design document or contract that is not in the repository, its
 * sections). Code cites docs/architecture.md#<anchor> or an operationId instead, or says the rule
 * in place. Relative paths that climb to a `shared/` folder are fine only when they land on this
 * repository's own `shared/` (an import from functions/ or test/).
 */

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '..');

/** Written in pieces, so this file does not trip its own rule. */
const FORBIDDEN = [`DESIGN${'.md'}`, `DESIGN ${'§'}`, `spec ${'§'}`, `/work${'/shared'}`];
const CLIMB_TO_SHARED = /(?:\.\.\/)+shared\//g;

/** Every reference in `text` (the contents of repository path `file`) to material outside the repository. */
function outsideReferences(file: string, text: string): string[] {
  const found: string[] = [];
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    const where = `${file}:${i + 1}`;
    for (const needle of FORBIDDEN) if (line.includes(needle)) found.push(`${where}: ${needle}`);
    for (const match of line.matchAll(CLIMB_TO_SHARED)) {
      const target = posix.normalize(posix.join(posix.dirname(file), match[0]));
      if (!target.startsWith('shared/')) found.push(`${where}: ${match[0]} (leaves the repository or misses its shared/)`);
    }
  });
  return found;
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');

function trackedFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return out.split('\0').filter((f) => f && !f.split('/').includes('node_modules'));
}

describe('the repository stands on its own', () => {
  it('the check itself: catches outside references, allows imports of our own shared/', () => {
    const up = '../'; // samples built from pieces, like FORBIDDEN
    expect(outsideReferences('functions/memories/service.ts', `import { x } from '${up}${up}shared/platform/contract/ids';`)).toEqual([]);
    expect(outsideReferences('test/boundaries.test.ts', `'${up}shared/platform/contract/ids'`)).toEqual([]);
    expect(outsideReferences('README.md', `see ${up}shared/notes.md`)).toHaveLength(1);
    expect(outsideReferences('test/bench/x.ts', `new URL('${up}${up}${up}shared/data/', import.meta.url)`)).toHaveLength(1);
    expect(outsideReferences('functions/x.ts', `// ${FORBIDDEN[2]}3.3`)).toHaveLength(1);
    expect(outsideReferences('docs/x.md', `read ${FORBIDDEN[0]} first`)).toHaveLength(1);
  });

  it('no tracked file points outside the repository', () => {
    const found: string[] = [];
    for (const file of trackedFiles()) {
      let text: string;
      try {
        text = readFileSync(join(ROOT, file), 'utf8');
      } catch {
        continue; // a symlink to a directory, or a file deleted but not yet committed
      }
      if (text.includes('\0')) continue; // binary
      found.push(...outsideReferences(file, text));
    }
    expect(found, 'cite docs/architecture.md#<anchor>, an operationId, or say the rule in place').toEqual([]);
  });

  it('every docs/architecture.md#<anchor> cited names a heading of that page', () => {
    const page = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
    const anchors = new Set([...page.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchorOf(m[1])));
    const dangling: string[] = [];
    for (const file of trackedFiles()) {
      let text: string;
      try {
        text = readFileSync(join(ROOT, file), 'utf8');
      } catch {
        continue;
      }
      const own = file === 'docs/architecture.md' ? [...text.matchAll(/\]\(#([\w-]+)\)/g)] : [];
      const cited = [...text.matchAll(/architecture\.md#([\w-]+)/g), ...own];
      for (const [, anchor] of cited) if (!anchors.has(anchor)) dangling.push(`${file}: #${anchor}`);
    }
    expect(dangling, 'a heading of docs/architecture.md was renamed or a citation is misspelt').toEqual([]);
  });
});
