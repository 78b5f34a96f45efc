/**
 * What a log line may say about an error. drizzle wraps a failed query in an error whose message
 * (and so its stack) holds the SQL text and every parameter: memory text, embeddings, e-mail
 * addresses, token hashes. Drivers attach the statement and parameters to their errors too. So an
 * error is described from an allowlist: the database's own message and SQLSTATE code, the statement
 * with its literals blanked, and the stack frames without the message line. Parameters never.
 */
export type ErrorFields = {
  error: string;
  error_name?: string;
  pg_code?: string;
  code?: string;
  statement?: string;
  stack?: string;
};

const MAX_STATEMENT = 2_000;
const MAX_MESSAGE = 1_000;
const MAX_FRAMES = 12;

type Described = { name?: unknown; message?: unknown; code?: unknown; stack?: unknown; query?: unknown; cause?: unknown };

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}…` : text);

/**
 * A statement's shape without its data: string and dollar-quoted literals become `'?'`, numbers
 * stay (placeholders like $1 carry the values, which are never logged), whitespace collapses.
 */
export function redactStatement(statement: string): string {
  const shape = statement
    .replace(/\$([A-Za-z_]\w*)?\$[\s\S]*?\$\1\$/g, "'?'")
    .replace(/[EeUuBbXx]?'(?:[^']|'')*'/g, "'?'")
    .replace(/\s+/g, ' ')
    .trim();
  return clip(shape, MAX_STATEMENT);
}

/** `at ...` lines only: the first line of a stack repeats the message. */
function framesOf(stack: unknown): string | undefined {
  if (typeof stack !== 'string') return undefined;
  const frames = stack
    .split('\n')
    .filter((l) => /^\s+at /.test(l))
    .slice(0, MAX_FRAMES)
    .map((l) => l.trim());
  return frames.length ? frames.join('\n') : undefined;
}

export function errorFields(err: unknown): ErrorFields {
  if (!err || typeof err !== 'object') return { error: clip(String(err), MAX_MESSAGE) };
  const e = err as Described;
  // drizzle's DrizzleQueryError: `query` + `params`, message "Failed query: ...", the driver's error as `cause`.
  const isWrapper = typeof e.query === 'string' && typeof e.message === 'string' && e.message.startsWith('Failed query: ');
  const wrapped = isWrapper && e.cause && typeof e.cause === 'object' ? (e.cause as Described) : null;
  const db = wrapped ?? e;
  // Drivers (PGlite) may also hang `query` and `params` on their own errors.
  const statement = typeof e.query === 'string' ? e.query : typeof db.query === 'string' ? db.query : undefined;
  const code = typeof db.code === 'string' ? db.code : undefined;
  const sqlstate = code && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
  // A wrapper without its cause: its own message is the statement and parameters.
  const message = isWrapper && !wrapped ? 'Failed query' : typeof db.message === 'string' ? db.message : String(db);
  const fields: ErrorFields = {
    error: clip(message, MAX_MESSAGE),
    error_name: typeof e.name === 'string' ? e.name : undefined,
    pg_code: sqlstate,
    code: sqlstate ? undefined : code?.slice(0, 64),
    statement: statement === undefined ? undefined : redactStatement(statement),
    stack: framesOf(e.stack),
  };
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as unknown as ErrorFields;
}
