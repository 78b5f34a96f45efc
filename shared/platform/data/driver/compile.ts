import { SQL, StringChunk } from 'drizzle-orm';
import type { DbOrTx } from '../db';
import { type Compiled, type Dialect, dialectOf, inlinesParams } from './internals';

/**
 * The text and parameters of `query`. drizzle's compiler sends every chunk through its `is()`
 * checks (a prototype walk each); this one knows the chunks our raw SQL is made of (text, nested
 * SQL, values, lists of values) and compiles them the same way, `$n` for the nth value, and leaves
 * any other query (tables, columns, typed params, inlined params) to drizzle. On the store path
 * drizzle's compiler was the largest single part of Node's time.
 */
export function compile(db: DbOrTx | { dialect: Dialect }, query: SQL): Compiled {
  const params: unknown[] = [];
  const parts: string[] = [];
  const one = (chunk: unknown): boolean => {
    if (chunk instanceof StringChunk) {
      for (const text of chunk.value) parts.push(text);
    } else if (chunk instanceof SQL) {
      if (inlinesParams(chunk) || !walk(chunk.queryChunks)) return false;
    } else if (chunk === undefined) return true;
    else if (Array.isArray(chunk)) {
      parts.push('(');
      for (let i = 0; i < chunk.length; i++) {
        if (i > 0) parts.push(', ');
        if (!one(chunk[i])) return false;
      }
      parts.push(')');
    } else if (chunk === null || typeof chunk !== 'object' || chunk instanceof Date) {
      params.push(chunk);
      parts.push(`$${params.length}`);
    } else return false;
    return true;
  };
  const walk = (chunks: readonly unknown[]): boolean => {
    for (const chunk of chunks) if (!one(chunk)) return false;
    return true;
  };
  if (!inlinesParams(query) && walk(query.queryChunks)) return { sql: parts.join(''), params };
  return dialectOf(db).sqlToQuery(query);
}
