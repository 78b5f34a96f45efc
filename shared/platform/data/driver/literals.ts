/** What a literal's text must be checked for: a quote or a backslash to escape, a NUL to refuse. */
const LITERAL_CARE = /['\\\0]/;

/**
 * A parameter as an SQL literal. Every value is quoted, so it reaches the statement as an untyped
 * literal and goes through the type's input function: the same thing a text-format bind parameter
 * does. `E''` escaping holds whatever standard_conforming_strings says; NUL cannot be stored in text
 * and would end the statement.
 */
export function sqlLiteral(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  let text: string;
  if (typeof value === 'string') text = value;
  else if (typeof value === 'number' || typeof value === 'bigint') {
    if (typeof value === 'number' && !Number.isFinite(value)) throw new TypeError(`not a finite number: ${value}`);
    text = String(value);
  } else if (typeof value === 'boolean') text = value ? 'true' : 'false';
  else if (value instanceof Date) text = value.toISOString();
  else throw new TypeError(`unsupported SQL parameter: ${typeof value}`);
  // One scan finds what needs care: most values (a vector's text, ids, timestamps) hold none of it.
  if (!LITERAL_CARE.test(text)) return `E'${text}'`;
  if (text.includes('\0')) throw new TypeError('SQL parameter contains NUL');
  return `E'${text.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
}

/** A text cut at its placeholders: `pieces[0]`, then `literals[slots[i]]` and `pieces[i + 1]` for each. */
interface Cut {
  pieces: string[];
  slots: number[];
}
const cuts = new Map<string, Cut>();
/** Texts come from a few fixed shapes; past this many (batches of varying size), a text is cut afresh each time. */
const MAX_CUTS = 256;

function cutAtPlaceholders(text: string): Cut {
  const pieces: string[] = [];
  const slots: number[] = [];
  const placeholder = /\$(\d+)/g;
  let from = 0;
  for (let m = placeholder.exec(text); m; m = placeholder.exec(text)) {
    pieces.push(text.slice(from, m.index));
    slots.push(Number(m[1]) - 1);
    from = m.index + m[0].length;
  }
  pieces.push(text.slice(from));
  return { pieces, slots };
}

/**
 * A statement's text with its parameters' literals (sqlLiteral) written in, for a simple-protocol
 * message that carries more than one statement. Our statements' texts hold no `$` but their
 * parameters' placeholders (drizzle puts every value in a parameter). A text is cut at its
 * placeholders once (a search's runs to a few kilobytes, and scanning it at every call was most of
 * this function's time), then each call joins the pieces with its literals.
 */
export function placeLiterals(text: string, literals: readonly string[]): string {
  let cut = cuts.get(text);
  if (!cut) {
    cut = cutAtPlaceholders(text);
    if (cuts.size < MAX_CUTS) cuts.set(text, cut);
  }
  const { pieces, slots } = cut;
  let out = pieces[0];
  for (let i = 0; i < slots.length; i++) out += literals[slots[i]] + pieces[i + 1];
  return out;
}
