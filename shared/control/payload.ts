import { NFA_COST } from './budget';
import type { CompiledPattern, TextIndex } from './regex';
import type { ActionInput, MemoryInput } from './types';

/**
 * The action as policy evaluation sees it (see `evaluatePolicies`): its canonical text, the JSON
 * path of each part of it, where a pattern matches in it, and the hosts it names.
 */

// ---------------------------------------------------------------------------------------------
// The canonical text and where each part of it came from.

const IDENT = /^[A-Za-z_$][\w$]*$/;
const childPath = (parent: string, key: string) => (IDENT.test(key) ? `${parent}.${key}` : `${parent}['${key.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}']`);
const MAX_DEPTH = 64;

export interface CanonicalPayload {
  text: string;
  /** Start offset of each token, ascending; `paths[i]` is the JSON path token i belongs to. */
  starts: number[];
  paths: string[];
}

/**
 * `JSON.stringify({action, params})` (or `{memory}` for a memory write) with its strings decoded (quoted but not escaped: a tab is a
 * tab), written by hand to remember the JSON path of every token. Rules match what the agent
 * actually sends, not its JSON escaping.
 */
export function canonicalPayload(input: Pick<ActionInput, 'action' | 'params'> | Pick<MemoryInput, 'memory'>): CanonicalPayload {
  const parts: string[] = [];
  const starts: number[] = [];
  const paths: string[] = [];
  let pos = 0;
  const emit = (s: string, path: string) => {
    starts.push(pos);
    paths.push(path);
    parts.push(s);
    pos += s.length;
  };
  const value = (v: unknown, path: string, depth: number): void => {
    if (v === null || typeof v !== 'object') {
      const s =
        typeof v === 'string' ? `"${v}"` : typeof v === 'number' ? (Number.isFinite(v) ? String(v) : 'null') : typeof v === 'boolean' ? String(v) : 'null';
      emit(s, path);
      return;
    }
    if (depth >= MAX_DEPTH) {
      // Deeper than any caller validates (the dry run allows 32 levels): one token, never a crash.
      let deep: string;
      try {
        deep = JSON.stringify(v) ?? 'null';
      } catch {
        deep = '"[nested too deep]"';
      }
      emit(deep, path);
      return;
    }
    if (Array.isArray(v)) {
      emit('[', path);
      v.forEach((item, i) => {
        if (i) emit(',', path);
        value(item === undefined || typeof item === 'function' ? null : item, `${path}[${i}]`, depth + 1);
      });
      emit(']', path);
      return;
    }
    emit('{', path);
    let first = true;
    for (const [k, item] of Object.entries(v as Record<string, unknown>)) {
      if (item === undefined || typeof item === 'function') continue;
      const at = childPath(path, k);
      emit(`${first ? '' : ','}"${k}":`, at);
      first = false;
      value(item, at, depth + 1);
    }
    emit('}', path);
  };
  value('memory' in input ? { memory: input.memory } : { action: input.action, params: input.params ?? {} }, '$', 0);
  return { text: parts.join(''), starts, paths };
}

/** The index of the token holding `offset`. */
function tokenAt(payload: CanonicalPayload, offset: number): number {
  let lo = 0;
  let hi = payload.starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (payload.starts[mid] <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** The JSON path of the token holding `offset`. */
export function fieldAt(payload: CanonicalPayload, offset: number): string {
  return payload.paths[tokenAt(payload, offset)] ?? '$';
}

const MAX_CANDIDATES = 32;

/**
 * Where a pattern that matches the text (its DFA said so) matches. The NFA that finds positions is
 * much slower than the DFA (NFA_COST), so it first runs on small windows: each value holding one of
 * the pattern's required literals, with the token before it (its key) and after it. The first window
 * with a match gives it; when none does (a match across more values, an anchored pattern, a
 * pattern without literals) the NFA runs over the whole text for the leftmost match. `scanned`
 * counts the characters the engine went over, for the work budget.
 */
export function locate(p: CompiledPattern, payload: CanonicalPayload, index: TextIndex): { hit: { start: number; end: number } | null; scanned: number } {
  const { text, starts } = payload;
  let scanned = 0;
  if (p.required && !p.anchored && index.folded.length === text.length) {
    const tokens = new Set<number>();
    for (const literal of p.required[0]) {
      for (let at = index.folded.indexOf(literal); at >= 0 && tokens.size < MAX_CANDIDATES; at = index.folded.indexOf(literal, at + 1))
        tokens.add(tokenAt(payload, at));
    }
    for (const t of [...tokens].sort((a, b) => a - b)) {
      const from = starts[Math.max(0, t - 1)];
      const to = t + 2 < starts.length ? starts[t + 2] : text.length;
      const window = text.slice(from, to);
      scanned += window.length;
      if (!p.re.test(window)) continue;
      scanned += NFA_COST * window.length;
      const m = p.re.matcher(window);
      if (m.find()) return { hit: { start: from + m.start(), end: from + m.end() }, scanned };
    }
  }
  const m = p.re.matcher(text);
  scanned += NFA_COST * text.length;
  return { hit: m.find() ? { start: m.start(), end: m.end() } : null, scanned };
}

// ---------------------------------------------------------------------------------------------
// Hosts named in the payload, found without regexes (linear scans around `://` and `@`).

const HOST_CHAR = /[a-z0-9.-]/;
const LOCAL_CHAR = /[a-z0-9._%+-]/;

export function hostsIn(text: string): string[] {
  const lower = text.toLowerCase();
  const hosts = new Set<string>();
  const add = (h: string) => {
    const host = h.replace(/\.+$/, '');
    if (host && /[a-z0-9]/.test(host) && !host.startsWith('.') && !host.startsWith('-')) hosts.add(host);
  };
  for (let i = lower.indexOf('://'); i >= 0; i = lower.indexOf('://', i + 3)) {
    let j = i + 3;
    let authorityEnd = j;
    while (authorityEnd < lower.length && !'/?#"\\ \t\r\n'.includes(lower[authorityEnd])) authorityEnd++;
    // Userinfo ends at the authority's last '@' (looked for inside the authority only: linear).
    const at = lower.slice(j, authorityEnd).lastIndexOf('@');
    if (at >= 0) j += at + 1;
    let k = j;
    while (k < authorityEnd && HOST_CHAR.test(lower[k])) k++;
    add(lower.slice(j, k));
  }
  for (let i = lower.indexOf('@'); i >= 0; i = lower.indexOf('@', i + 1)) {
    if (i === 0 || !LOCAL_CHAR.test(lower[i - 1])) continue;
    let k = i + 1;
    while (k < lower.length && HOST_CHAR.test(lower[k])) k++;
    const domain = lower.slice(i + 1, k);
    if (domain.includes('.')) add(domain);
  }
  return [...hosts];
}

export const whitelisted = (host: string, domains: string[]) => domains.some((d) => host === d || host.endsWith(`.${d}`));
