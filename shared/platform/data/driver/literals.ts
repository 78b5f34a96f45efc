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

/**
 * A statement's text with its parameters' literals (sqlLiteral) written in, for a simple-protocol
 * message that carries more than one statement. Our statements' texts hold no `$` but their
 * parameters' placeholders (drizzle puts every value in a parameter).
 */
export const placeLiterals = (text: string, literals: readonly string[]) => text.replace(/\$(\d+)/g, (_, i: string) => literals[Number(i) - 1]);
