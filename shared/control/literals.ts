/**
 * Required literals of a pattern, for the prefilter of `regex.ts` (`CompiledPattern.required`).
 */

// ---------------------------------------------------------------------------------------------
// Required literals: a conservative reading of the pattern (Google Code Search's trigram idea,
// with whole literals). Anything the reader does not fully understand yields null (no filter),
// which is always correct: the filter may only ever skip patterns that cannot match.

/** `exact`: every string the node can match (when few); `reqs`: sets of which a match contains one string each. */
type Info = { exact: Set<string> | null; reqs: Set<string>[] };
const MAX_SET = 16;
const MAX_LIT = 64;
class Bail extends Error {}

const exactToReq = (exact: Set<string> | null): Set<string> | null => (exact?.size && ![...exact].some((s) => s.length === 0) ? exact : null);
const minLen = (s: Set<string> | null) => (s ? Math.min(...[...s].map((x) => x.length)) : 0);
const withRun = (reqs: Set<string>[], run: Set<string> | null) => {
  const r = exactToReq(run);
  return r ? [...reqs, r] : reqs;
};
/** The strongest single set of a node: what an alternation can carry up. */
const bestOf = (info: Info): Set<string> | null => withRun(info.reqs, info.exact).reduce<Set<string> | null>((a, b) => (minLen(b) > minLen(a) ? b : a), null);

function concat(parts: Info[]): Info {
  // `run`: the strings the current run of adjacent exact parts can match; a part of unknown
  // content (or a run grown too large) closes the run, whose strings are then required.
  let run: Set<string> = new Set(['']);
  let allExact = true;
  let reqs: Set<string>[] = [];
  for (const part of parts) {
    reqs = reqs.concat(part.reqs);
    if (part.exact) {
      const next = new Set<string>();
      for (const a of run) for (const b of part.exact) next.add(a + b);
      if (next.size <= MAX_SET && [...next].every((s) => s.length <= MAX_LIT)) {
        run = next;
        continue;
      }
      reqs = withRun(reqs, run);
      allExact = false;
      run = part.exact.size <= MAX_SET ? new Set(part.exact) : new Set(['']);
    } else {
      reqs = withRun(reqs, run);
      allExact = false;
      run = new Set(['']);
    }
  }
  if (allExact) return { exact: run, reqs };
  return { exact: null, reqs: withRun(reqs, run) };
}

function alternate(options: Info[]): Info {
  let exact: Set<string> | null = new Set();
  for (const o of options) {
    if (!exact || !o.exact) {
      exact = null;
      break;
    }
    for (const s of o.exact) exact.add(s);
    if (exact.size > MAX_SET) exact = null;
  }
  let req: Set<string> | null = new Set();
  for (const o of options) {
    const r = bestOf(o);
    if (!r || !req) {
      req = null;
      break;
    }
    for (const s of r) req.add(s);
  }
  return { exact, reqs: req && req.size <= MAX_SET * 2 ? [req] : [] };
}

const ANY: Info = { exact: null, reqs: [] };
const EMPTY: Info = { exact: new Set(['']), reqs: [] };

/** Parses enough of RE2 syntax to find required literals; throws Bail on anything unusual. */
function parse(src: string): Info {
  let i = 0;
  const alternation = (): Info => {
    const options = [sequence()];
    while (src[i] === '|') {
      i++;
      options.push(sequence());
    }
    return options.length === 1 ? options[0] : alternate(options);
  };
  const sequence = (): Info => {
    const parts: Info[] = [];
    while (i < src.length && src[i] !== '|' && src[i] !== ')') {
      let atom = parseAtom();
      // Quantifiers (possibly several, possibly lazy).
      for (;;) {
        const c = src[i];
        let min: number | null = null;
        if (c === '*' || c === '?') min = 0;
        else if (c === '+') min = 1;
        else if (c === '{') {
          const m = /^\{(\d+)(,(\d*))?\}/.exec(src.slice(i, i + 16));
          if (!m) throw new Bail();
          min = Number(m[1]);
          const exactCount = m[2] === undefined;
          i += m[0].length - 1;
          if (exactCount && min === 1) {
            i++;
            if (src[i] === '?') i++;
            continue;
          }
        } else break;
        i++;
        if (src[i] === '?') i++;
        atom = min === 0 ? ANY : { exact: null, reqs: withRun(atom.reqs, atom.exact) };
      }
      parts.push(atom);
    }
    return parts.length === 0 ? EMPTY : concat(parts);
  };
  const parseAtom = (): Info => {
    const c = src[i];
    if (c === '(') {
      i++;
      if (src[i] === '?') {
        if (src[i + 1] === ':') i += 2;
        else if (src[i + 1] === 'P' && src[i + 2] === '<') i = src.indexOf('>', i) + 1;
        else if (src[i + 1] === '<') i = src.indexOf('>', i) + 1;
        else throw new Bail(); // flag groups change matching: no filter
        if (i <= 0) throw new Bail();
      }
      const inner = alternation();
      if (src[i] !== ')') throw new Bail();
      i++;
      return inner;
    }
    if (c === '[') {
      // Skip the class; RE2 allows ']' first and escapes inside.
      i++;
      if (src[i] === '^') i++;
      if (src[i] === ']') i++;
      while (i < src.length && src[i] !== ']') {
        if (src[i] === '\\') i++;
        else if (src[i] === '[' && src[i + 1] === ':') {
          const end = src.indexOf(':]', i + 2);
          if (end < 0) throw new Bail();
          i = end + 1;
        }
        i++;
      }
      if (src[i] !== ']') throw new Bail();
      i++;
      return ANY;
    }
    if (c === '.') {
      i++;
      return ANY;
    }
    if (c === '^' || c === '$') {
      i++;
      return EMPTY;
    }
    if (c === '\\') {
      const e = src[i + 1];
      if (e === undefined) throw new Bail();
      if (/[bBAz]/.test(e)) {
        i += 2;
        return EMPTY;
      }
      if (/[dDsSwWpP]/.test(e)) {
        i += 2;
        if ((e === 'p' || e === 'P') && src[i] === '{') i = src.indexOf('}', i) + 1;
        else if (e === 'p' || e === 'P') i++;
        if (i <= 0) throw new Bail();
        return ANY;
      }
      if (/[^A-Za-z0-9]/.test(e)) {
        i += 2;
        return lit(e);
      }
      throw new Bail(); // \x41, \Q...\E, \n, \t, octal: no filter
    }
    if (c === '*' || c === '+' || c === '?' || c === '{' || c === ')' || c === '|') throw new Bail();
    // A literal character (a surrogate pair stays one character).
    const code = src.codePointAt(i)!;
    const ch = String.fromCodePoint(code);
    i += ch.length;
    return lit(ch);
  };
  const info = alternation();
  if (i !== src.length) throw new Bail();
  return info;
}

function lit(ch: string): Info {
  // Only ASCII letters and punctuation have simple folding we can mirror with toLowerCase.
  if (ch.charCodeAt(0) > 0x7e || ch.length !== 1) return ANY;
  const lower = ch.toLowerCase();
  // 'k' and 's' also match U+212A and U+017F; foldForPrefilter folds those to ASCII in the text.
  return { exact: new Set([lower]), reqs: [] };
}

/**
 * The required literals of a pattern (lower-cased): sets of which every match contains one string
 * each, strongest first (at most four), or null when none can be established.
 */
export function requiredLiterals(source: string): string[][] | null {
  try {
    const info = parse(source);
    const sets = withRun(info.reqs, info.exact).filter((s) => minLen(s) >= 2);
    const unique = new Map(sets.map((s) => [[...s].sort().join('\u0000'), s]));
    const strongest = [...unique.values()].sort((a, b) => minLen(b) - minLen(a)).slice(0, 4);
    return strongest.length ? strongest.map((s) => [...s]) : null;
  } catch {
    return null;
  }
}
