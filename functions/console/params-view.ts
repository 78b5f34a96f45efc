import { MAX_MATCH_SHOWN } from '../../shared/control/evaluate';
import { canonicalPayload, fieldAt } from '../../shared/control/payload';

/**
 * An action's params as a card shows them (laid out as `JSON.stringify(params, null, 2)`), cut into
 * segments so that what each rule matched is marked where it matched. A rule matches the canonical
 * text of `{action, params}` (shared/control/payload.ts: compact, strings decoded), not this
 * layout, so the walk below writes both at once and keeps, for each piece shown, the canonical
 * range it stands for. Segments are plain text: the view escapes them like any other text.
 */

export interface Segment {
  text: string;
  /** Index of the violation whose match this text is part of; absent for unmatched text. */
  hit?: number;
}

export interface Violation {
  policy: string;
  rule_index: number;
  reason: string;
  match: string;
  field: string;
}

/** Params this short are shown open on a card; longer ones behind their summary. */
const SHORT_PARAMS = { lines: 24, chars: 2_000 };
/** Occurrences of a match looked at when searching the one at its reported field. */
const MAX_OCCURRENCES = 64;
/** The canonical walk's depth limit (canonicalPayload): below it a value is one compact token. */
const MAX_DEPTH = 64;

/** A piece of the layout and the canonical range [c0, c1) it shows; c0 = c1 for layout whitespace. */
interface Piece {
  d: string;
  c0: number;
  c1: number;
}

const escaped = (s: string) => JSON.stringify(s).slice(1, -1);

/**
 * Where a violation's match lies in the canonical text, as a range: the evaluation shows a long
 * match cut (`…` after MAX_MATCH_SHOWN characters) and a credential redacted (its first 4
 * characters, then its length), so the range is found from what is shown. Of several occurrences,
 * the one starting at the violation's field.
 */
function matchRange(payload: ReturnType<typeof canonicalPayload>, v: Violation): [number, number] | null {
  let needle = v.match;
  let length = needle.length;
  const redacted = /^([\s\S]{1,4})…\[redacted (\d+) characters\]$/.exec(needle);
  if (redacted) {
    needle = redacted[1];
    length = Number(redacted[2]);
  } else if (needle.length === MAX_MATCH_SHOWN + 1 && needle.endsWith('…')) {
    needle = needle.slice(0, -1);
    length = needle.length;
  }
  if (!needle) return null;
  let first = -1;
  let seen = 0;
  for (let at = payload.text.indexOf(needle); at >= 0 && seen < MAX_OCCURRENCES; at = payload.text.indexOf(needle, at + 1), seen++) {
    if (first < 0) first = at;
    if (fieldAt(payload, at) === v.field) return [at, at + length];
  }
  return first < 0 ? null : [first, first + length];
}

/** Lays the params out, each piece to `emit` with its canonical range; `start` is where params begin in the canonical text. */
function layout(params: unknown, start: number, ranges: readonly ([number, number] | null)[], emit: (p: Piece) => void): void {
  let pos = start;
  const token = (canonical: string, display: string) => {
    emit({ d: display, c0: pos, c1: pos + canonical.length });
    pos += canonical.length;
  };
  const space = (d: string) => emit({ d, c0: pos, c1: pos });
  /**
   * A quoted string: one piece, or where a match overlaps it one piece per code point (quotes
   * included), so the match may start or end anywhere in it; the segments merge again.
   */
  const string = (s: string) => {
    const end = pos + s.length + 2;
    if (!ranges.some((r) => r && r[0] < end && pos < r[1])) {
      token(`"${s}"`, JSON.stringify(s));
      return;
    }
    token('"', '"');
    for (const ch of s) token(ch, escaped(ch));
    token('"', '"');
  };
  const value = (v: unknown, depth: number, indent: string): void => {
    if (v === null || typeof v !== 'object') {
      if (typeof v === 'string') {
        string(v);
        return;
      }
      const s = typeof v === 'number' ? (Number.isFinite(v) ? String(v) : 'null') : typeof v === 'boolean' ? String(v) : 'null';
      token(s, s);
      return;
    }
    if (depth >= MAX_DEPTH) {
      let deep: string;
      try {
        deep = JSON.stringify(v) ?? 'null';
      } catch {
        deep = '"[nested too deep]"';
      }
      token(deep, deep);
      return;
    }
    const inner = `${indent}  `;
    if (Array.isArray(v)) {
      token('[', '[');
      v.forEach((item, i) => {
        if (i) token(',', ',');
        space(`\n${inner}`);
        value(item === undefined || typeof item === 'function' ? null : item, depth + 1, inner);
      });
      if (v.length) space(`\n${indent}`);
      token(']', ']');
      return;
    }
    token('{', '{');
    let first = true;
    for (const [k, item] of Object.entries(v as Record<string, unknown>)) {
      if (item === undefined || typeof item === 'function') continue;
      if (!first) token(',', ',');
      first = false;
      space(`\n${inner}`);
      string(k);
      token(':', ': ');
      value(item, depth + 1, inner);
    }
    if (!first) space(`\n${indent}`);
    token('}', '}');
  };
  value(params ?? {}, 1, '');
}

/** Which violation (index) covers a piece: overlapping a range, or layout strictly inside one. */
function hitOf(p: Piece, ranges: readonly ([number, number] | null)[]): number | undefined {
  for (let i = 0; i < ranges.length; i++) {
    const r = ranges[i];
    if (!r) continue;
    if (p.c0 === p.c1 ? r[0] < p.c0 && p.c0 < r[1] : p.c0 < r[1] && r[0] < p.c1) return i;
  }
  return undefined;
}

/**
 * The params of an action as segments, each match marked; `short` says whether they are short
 * enough to be shown open. A match outside the params (in the action's name) marks nothing here.
 */
export function paramsView(action: string, params: Record<string, unknown>, violations: readonly Violation[] = []) {
  const shown = JSON.stringify(params ?? {}, null, 2);
  const short = shown.split('\n').length <= SHORT_PARAMS.lines && shown.length <= SHORT_PARAMS.chars;
  const payload = violations.length ? canonicalPayload({ action, params }) : null;
  const ranges = payload ? violations.map((v) => matchRange(payload, v)) : [];
  if (!ranges.some(Boolean)) return { segments: [{ text: shown }] as Segment[], text: shown, short };
  // `{"action":"<action>","params":` precedes the params in the canonical text.
  const start = canonicalPayload({ action, params: {} }).text.length - 3;
  const segments: Segment[] = [];
  let parts: string[] = [];
  let current: number | undefined;
  const close = () => {
    if (parts.length) segments.push(current === undefined ? { text: parts.join('') } : { text: parts.join(''), hit: current });
    parts = [];
  };
  layout(params, start, ranges, (p) => {
    const hit = hitOf(p, ranges);
    if (hit !== current) {
      close();
      current = hit;
    }
    parts.push(p.d);
  });
  close();
  return { segments, text: shown, short };
}

/**
 * A text (a held memory's observation) as segments with each match marked: the first exact
 * occurrence, else the first ignoring case.
 */
export function textView(text: string, matches: readonly string[]): Segment[] {
  const ranges = matches.map((m): [number, number] => {
    let at = m ? text.indexOf(m) : -1;
    if (m && at < 0) at = text.toLowerCase().indexOf(m.toLowerCase());
    return at < 0 ? [-1, -1] : [at, at + m.length];
  });
  const segments: Segment[] = [];
  const cuts = new Set([0, text.length]);
  for (const [a, b] of ranges) if (a >= 0) cuts.add(a).add(b);
  const sorted = [...cuts].sort((x, y) => x - y);
  for (let i = 0; i + 1 < sorted.length; i++) {
    const [a, b] = [sorted[i], sorted[i + 1]];
    const hit = ranges.findIndex(([x, y]) => x <= a && b <= y && x < y);
    const last = segments[segments.length - 1];
    const piece = text.slice(a, b);
    if (last && (last.hit ?? -1) === hit) last.text += piece;
    else segments.push(hit < 0 ? { text: piece } : { text: piece, hit });
  }
  return segments;
}
