import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anchorsOf, githubSlug, proseLines } from './markdown';
import { startServer, stopServer } from './server-process';

/**
 * The written docs, checked as a reader meets them: (a) every relative link and #anchor of README.md,
 * CONTRIBUTING.md and docs/*.md leads somewhere, and (b) their runnable examples run. A ```sh block
 * right after the line `<!-- runnable -->` is run by bash, every block of one file in order in one
 * shell, against a fresh embedded server at `$BASE` (ADMIN_TOKEN exported too); a ```json block
 * right after it shows the answer of its last command, and every top-level key shown must be in the
 * real answer (values are not compared; `…` and `...` may abbreviate).
 */
const root = resolve(new URL('..', import.meta.url).pathname);
const FIXTURE = join(root, 'test/fixtures/runnable-tour.md');
const ADMIN_TOKEN = 'docs-links-admin-token-0123456789';
const RUN_TIMEOUT_MS = 180_000;

function docFiles(): string[] {
  const docs = existsSync(join(root, 'docs'))
    ? readdirSync(join(root, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .sort()
        .map((f) => join(root, 'docs', f))
    : [];
  return [join(root, 'README.md'), join(root, 'CONTRIBUTING.md'), ...docs].filter((f) => existsSync(f));
}

const rel = (file: string) => relative(root, file);

/** Every link target of a Markdown file outside code: inline links and images, reference definitions, href/src. */
function linksOf(text: string): { target: string; line: number }[] {
  const out: { target: string; line: number }[] = [];
  for (const [i, raw] of proseLines(text).entries()) {
    const line = raw.replace(/`[^`]*`/g, '``');
    for (const m of line.matchAll(/!?\[(?:[^\]]|\][^(])*?\]\(\s*<?([^)\s>]+)>?(?:\s+["'(][^)]*)?\)/g)) out.push({ target: m[1], line: i + 1 });
    const def = /^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$/.exec(line);
    if (def) out.push({ target: def[1], line: i + 1 });
    for (const m of line.matchAll(/\b(?:href|src)\s*=\s*["']([^"']+)["']/gi)) out.push({ target: m[1], line: i + 1 });
  }
  return out;
}

/** What is wrong with each relative link of `file` (none: []). */
function brokenLinks(file: string): string[] {
  const broken: string[] = [];
  for (const { target, line } of linksOf(readFileSync(file, 'utf8'))) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue; // http:, mailto:, ...
    const [pathPart, anchor] = target.split('#', 2);
    const path = decodeURIComponent(pathPart);
    const dest = path ? (path.startsWith('/') ? join(root, path) : resolve(dirname(file), path)) : file;
    const where = `${rel(file)}:${line} → ${target}`;
    if (!existsSync(dest)) {
      broken.push(`${where}: ${rel(dest)} does not exist`);
      continue;
    }
    // Anchors into other files are GitHub's line anchors (#L10) or a rendering we do not model.
    if (anchor === undefined || !dest.endsWith('.md') || statSync(dest).isDirectory()) continue;
    if (!anchorsOf(readFileSync(dest, 'utf8')).has(decodeURIComponent(anchor)))
      broken.push(`${where}: no heading or <a id> in ${rel(dest)} has the anchor #${anchor}`);
  }
  return broken;
}

interface Runnable {
  code: string;
  firstLine: string;
  /** The ```json block shown right after, if any. */
  shown: string | null;
}

/** The runnable ```sh blocks of a Markdown file, in order, each with the JSON shown after it. */
function runnableBlocks(text: string): Runnable[] {
  const lines = text.split('\n');
  const blocks: Runnable[] = [];
  const nextNonBlank = (from: number) => {
    let i = from;
    while (i < lines.length && !lines[i].trim()) i++;
    return i;
  };
  /** The fenced block opening at `start` with an info string matching `info`: its body and the line after it. */
  const fenced = (start: number, info: RegExp): { body: string; end: number } | null => {
    const open = /^ {0,3}(`{3,})\s*(\S*)/.exec(lines[start] ?? '');
    if (!open || !info.test(open[2])) return null;
    let i = start + 1;
    while (i < lines.length && lines[i].trim() !== open[1]) i++;
    return { body: lines.slice(start + 1, i).join('\n'), end: i + 1 };
  };
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() !== '<!-- runnable -->') continue;
    const sh = fenced(nextNonBlank(i + 1), /^(sh|bash|shell)$/);
    if (!sh) continue;
    const json = fenced(nextNonBlank(sh.end), /^json$/);
    blocks.push({ code: sh.body, firstLine: sh.body.split('\n').find((l) => l.trim()) ?? '', shown: json?.body ?? null });
    i = (json?.end ?? sh.end) - 1;
  }
  return blocks;
}

/**
 * The top-level keys of a shown JSON answer, which may be abbreviated with … or ...: parsed when it
 * is valid JSON, else read by a scanner that tracks strings and depth. `array` when it is a list.
 */
function shownKeys(shown: string): { array: boolean; keys: string[] } {
  const text = shown.trim();
  try {
    const value = JSON.parse(text);
    return Array.isArray(value) ? { array: true, keys: [] } : { array: false, keys: value && typeof value === 'object' ? Object.keys(value) : [] };
  } catch {
    /* abbreviated: scan it */
  }
  if (text.startsWith('[')) return { array: true, keys: [] };
  const keys: string[] = [];
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const after = text.slice(j + 1).match(/^\s*:/);
      if (depth === 1 && after) keys.push(JSON.parse(text.slice(i, j + 1)));
      i = j;
    } else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
  }
  return { array: false, keys };
}

/** The last JSON value a block printed: the whole output, else from the last line that opens one. */
function lastJson(output: string): unknown {
  const text = output.trim();
  try {
    return JSON.parse(text);
  } catch {
    /* more than one value, or text before it */
  }
  const lines = text.split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    if (!/^\s*[[{]/.test(lines[i])) continue;
    try {
      return JSON.parse(lines.slice(i).join('\n'));
    } catch {
      /* an inner line of a larger value; keep looking up */
    }
  }
  throw new Error('no JSON at the end of its output');
}

const START = '@@engram-docs-block-start@@';
const END = '@@engram-docs-block-end@@';

/** One bash script running every block in order, each between markers on stdout. */
function script(blocks: Runnable[]): string {
  return ['set -euo pipefail', ...blocks.flatMap((b, i) => [`printf '\\n${START} %d\\n' ${i}`, b.code, `printf '\\n${END} %d\\n' ${i}`])].join('\n');
}

/** Runs the blocks of one file against a fresh embedded server; every problem, naming file and block. */
async function runFile(file: string, blocks: Runnable[]): Promise<string[]> {
  const server = await startServer({ ADMIN_TOKEN, DATA_DIR: 'memory://', EMBEDDING_PROVIDER: 'hash', LOG_LEVEL: 'warn' }, { timeoutMs: 90_000 });
  const cwd = await mkdtemp(join(tmpdir(), 'engram-docs-run-'));
  try {
    const { stdout, stderr, code } = await new Promise<{ stdout: string; stderr: string; code: number | null }>((done) => {
      const env = { PATH: process.env.PATH ?? '', HOME: cwd, LANG: 'C.UTF-8', BASE: server.base, ADMIN_TOKEN };
      const p = spawn('bash', ['-c', script(blocks)], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      p.stdout.on('data', (d) => (out += d));
      p.stderr.on('data', (d) => (err += d));
      const timer = setTimeout(() => p.kill('SIGKILL'), RUN_TIMEOUT_MS - 30_000);
      p.on('close', (c) => {
        clearTimeout(timer);
        done({ stdout: out, stderr: err, code: c });
      });
    });
    const problems: string[] = [];
    for (const [i, block] of blocks.entries()) {
      const name = `${rel(file)}: block "${block.firstLine}"`;
      const start = stdout.indexOf(`${START} ${i}\n`);
      const end = stdout.indexOf(`\n${END} ${i}\n`);
      if (start < 0 || end < 0) {
        const output = start < 0 ? '' : stdout.slice(start + `${START} ${i}\n`.length);
        problems.push(`${name} ${start < 0 ? 'did not run' : 'failed'} (bash exit ${code})\noutput: ${output.slice(-2000)}\nstderr: ${stderr.slice(-2000)}`);
        break;
      }
      if (block.shown === null) continue;
      const output = stdout.slice(start + `${START} ${i}\n`.length, end);
      const expected = shownKeys(block.shown);
      let answer: unknown;
      try {
        answer = lastJson(output);
      } catch {
        problems.push(`${name}: its output is not JSON, though a JSON answer is shown after it\noutput: ${output.slice(-2000)}`);
        continue;
      }
      if (expected.array) {
        if (!Array.isArray(answer)) problems.push(`${name}: a list is shown, the answer is not one: ${output.slice(-500)}`);
        continue;
      }
      const got = answer && typeof answer === 'object' && !Array.isArray(answer) ? Object.keys(answer) : [];
      const missing = expected.keys.filter((k) => !got.includes(k));
      if (missing.length) problems.push(`${name}: the answer lacks ${missing.join(', ')} (shown in the JSON after it)\nanswer: ${output.slice(-1000)}`);
    }
    return problems;
  } finally {
    await stopServer(server);
    await rm(cwd, { recursive: true, force: true });
  }
}

describe('links in README.md, CONTRIBUTING.md and docs/*.md', () => {
  it.each([...docFiles(), FIXTURE].map((f) => [rel(f), f]))('%s: every relative link and #anchor resolves', (_name, file) => {
    expect(brokenLinks(file)).toEqual([]);
  });

  it('anchors are GitHub slugs: lowercase, punctuation dropped but - and _, repeats numbered, explicit <a id>', () => {
    expect(githubSlug('Get an API key')).toBe('get-an-api-key');
    expect(githubSlug('`POST /v1/keys`: sign up (free tier)')).toBe('post-v1keys-sign-up-free-tier');
    expect(githubSlug('snake_case and kebab-case, 2.0!')).toBe('snake_case-and-kebab-case-20');
    expect(githubSlug('[Linked](x.md) *bold*')).toBe('linked-bold');
    const anchors = anchorsOf('# A\n\n## A\n\n```sh\n# not a heading\n```\n\n## A\n\nSetext\n------\n\n<a id="custom"></a>\n<a name="named"></a>\n');
    expect([...anchors].sort()).toEqual(['a', 'a-1', 'a-2', 'custom', 'named', 'setext']);
  });

  it('finds a broken link and a missing anchor', () => {
    expect(brokenLinks(FIXTURE)).toEqual([]);
    const links = linksOf('[ok](README.md#x) `[code](nope.md)` ![img](a.png "title")\n\n```\n[in code](nope.md)\n```\n[ref]: docs/x.md\n<a href="y.md">y</a>');
    expect(links.map((l) => l.target)).toEqual(['README.md#x', 'a.png', 'docs/x.md', 'y.md']);
    const dir = mkdtempSync(join(tmpdir(), 'engram-docs-links-'));
    try {
      const page = join(dir, 'page.md');
      writeFileSync(page, '# Page\n\n[here](#page) [there](#nowhere) [gone](missing.md) [tour](#a-step-2)\n\n## A step\n\n## A step\n');
      const found = brokenLinks(page);
      expect(found).toHaveLength(3);
      expect(found[0]).toMatch(/→ #nowhere: no heading or <a id> in .*page\.md has the anchor #nowhere$/);
      expect(found[1]).toMatch(/→ missing\.md: .*missing\.md does not exist$/);
      expect(found[2]).toMatch(/→ #a-step-2: /);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('runnable examples', () => {
  it('reads blocks and the keys of an abbreviated answer', () => {
    const blocks = runnableBlocks(readFileSync(FIXTURE, 'utf8'));
    expect(blocks.map((b) => b.firstLine)).toEqual([
      'KEY=$(curl -s -XPOST $BASE/admin/v1/tenants -H "authorization: Bearer $ADMIN_TOKEN" \\',
      'curl -s -XPOST $BASE/v1/memories -H "authorization: Bearer $KEY" -H \'content-type: application/json\' \\',
      'curl -s "$BASE/v1/memories/search?q=when%20is%20the%20deploy" -H "authorization: Bearer $KEY"',
    ]);
    expect(blocks.every((b) => b.shown !== null)).toBe(true);
    expect(shownKeys('{ "tier": "pro", "features": { "replay": true, … }, … }')).toEqual({ array: false, keys: ['tier', 'features'] });
    expect(shownKeys('{\n  "a": "x\\"y: z",\n  "b": [{ "c": 1 }],\n  ...\n}')).toEqual({ array: false, keys: ['a', 'b'] });
    expect(shownKeys('[ { "x": 1 }, … ]').array).toBe(true);
    expect(lastJson('made\n{\n  "a": {\n    "b": 1\n  }\n}\n')).toEqual({ a: { b: 1 } });
  });

  const files = [...docFiles(), FIXTURE].map((file) => ({ file, blocks: runnableBlocks(readFileSync(file, 'utf8')) })).filter((f) => f.blocks.length > 0);
  it.each(files.map((f) => [rel(f.file), f]))(
    '%s: its runnable blocks run, and each answer has the keys shown',
    async (_name, { file, blocks }) => {
      expect(await runFile(file, blocks)).toEqual([]);
    },
    RUN_TIMEOUT_MS,
  );

  it(
    'names the file, the block and what is missing when an answer lacks a shown key',
    async () => {
      const blocks = runnableBlocks(
        '<!-- runnable -->\n```sh\necho hello\ncurl -s $BASE/healthz\n```\n\n```json\n{ "status": "ok", "no_such_key": 1, … }\n```\n\n<!-- runnable -->\n```sh\nfalse\n```\n',
      );
      const problems = await runFile(FIXTURE, blocks);
      expect(problems[0]).toMatch(/^test\/fixtures\/runnable-tour\.md: block "echo hello": the answer lacks no_such_key/);
      expect(problems[1]).toMatch(/^test\/fixtures\/runnable-tour\.md: block "false" failed/);
    },
    RUN_TIMEOUT_MS,
  );
});
