import { SQL, StringChunk, sql as drizzleSql } from 'drizzle-orm';

/**
 * drizzle's `sql` tag (with `join` and `raw`), building the same SQL objects without the check its
 * SQL constructor makes of every chunk, `is(chunk, Table)`: a walk up the chunk's prototype chain,
 * to list the tables a statement names for drizzle's query cache. The store and search paths build
 * hundreds of chunks per call, none of them a table, and that walk was drizzle's largest share of
 * their SQL building. Chunks that cannot be a table (text, nested SQL, plain values, lists, dates)
 * go into an SQL made empty and filled through its public `queryChunks`; a statement with any other
 * object among its chunks (a table, a column, a param) is built by drizzle's own tag, as before.
 */
function fastSql<T = unknown>(strings: TemplateStringsArray, ...params: unknown[]): SQL<T> {
  for (const p of params) if (!plain(p)) return drizzleSql<T>(strings, ...(params as never[]));
  const texts = textChunksOf(strings);
  const built = new SQL<T>([]);
  const chunks = built.queryChunks as unknown[];
  if (params.length > 0 || strings[0] !== '') chunks.push(texts[0]);
  for (let i = 0; i < params.length; i++) chunks.push(params[i], texts[i + 1]);
  return built;
}

/**
 * The text chunks of a template, made once per template: a template's strings are one frozen
 * object per place in the code, and a StringChunk is never changed after it is made (drizzle reads
 * its `value` only), so every statement built at that place can share them. The store path builds
 * a few hundred chunks per call; they were a good part of its allocations. An array that is not
 * frozen (a call made without a template) gets chunks of its own every time.
 */
const templateChunks = new WeakMap<TemplateStringsArray, StringChunk[]>();
function textChunksOf(strings: TemplateStringsArray): StringChunk[] {
  let texts = templateChunks.get(strings);
  if (!texts) {
    texts = strings.map((text) => new StringChunk(text));
    if (Object.isFrozen(strings)) templateChunks.set(strings, texts);
  }
  return texts;
}

/** Not a drizzle table, without asking drizzle: a primitive, or an object of a class no table is. */
const plain = (chunk: unknown): boolean =>
  chunk === null || typeof chunk !== 'object' || chunk instanceof SQL || chunk instanceof StringChunk || Array.isArray(chunk) || chunk instanceof Date;

function join(chunks: unknown[], separator?: unknown): SQL {
  if (!plain(separator) || !chunks.every(plain)) return drizzleSql.join(chunks as never[], separator as never);
  const built = new SQL([]);
  const out = built.queryChunks as unknown[];
  for (let i = 0; i < chunks.length; i++) {
    if (i > 0 && separator !== undefined) out.push(separator);
    out.push(chunks[i]);
  }
  return built;
}

function raw(text: string): SQL {
  const built = new SQL([]);
  built.queryChunks.push(new StringChunk(text));
  return built;
}

export const sql = Object.assign(fastSql, drizzleSql, { join, raw }) as unknown as typeof drizzleSql;
