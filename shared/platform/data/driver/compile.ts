import { SQL, StringChunk } from 'drizzle-orm';
import type { DbOrTx } from '../db';
import { type Compiled, type Dialect, dialectOf, inlinesParams } from './internals';

/**
 * The texts already compiled, by the sequence of pieces they were joined from: a trie whose edges
 * are the pieces (the `sql` tag's template strings, raw text) and, for a parameter, its number.
 * A statement of a shape seen before ends on a node that holds its text, the very string object of
 * the first time: no join, and the maps keyed by statement text (db.ts `statementName`, the
 * connection's prepared names in short-transactions.ts) find it without hashing kilobytes of SQL
 * again (a fresh string's hash is computed over all of it; the store's statements run to several
 * kilobytes). The text is a function of the pieces alone, so a hit gives what the join would.
 */
interface Shape {
  /** The first piece seen after this one and where it leads; any other piece, `more`. */
  piece?: string | number;
  to?: Shape;
  more?: Map<string | number, Shape>;
  text?: string;
}
const shapes: Shape = {};
let shapeCount = 0;
/**
 * Bounds: all shapes together (a few tens of bytes each), and the pieces seen after one piece
 * (raw text that varies per call, such as a value written in, stops growing the trie there; the
 * statements that then miss are joined as before).
 */
const MAX_SHAPES = 50_000;
const MAX_BRANCHES = 256;

function follow(at: Shape | null, piece: string | number): Shape | null {
  if (!at) return null;
  if (at.to !== undefined && at.piece === piece) return at.to;
  let to = at.more?.get(piece);
  if (to) return to;
  if (shapeCount >= MAX_SHAPES) return null;
  to = {};
  if (at.to === undefined) {
    at.piece = piece;
    at.to = to;
  } else {
    at.more ??= new Map();
    if (at.more.size >= MAX_BRANCHES) return null;
    at.more.set(piece, to);
  }
  shapeCount++;
  return to;
}

/**
 * The text and parameters of `query`. drizzle's compiler sends every chunk through its `is()`
 * checks (a prototype walk each); this one knows the chunks our raw SQL is made of (text, nested
 * SQL, values, lists of values) and compiles them the same way, `$n` for the nth value, and leaves
 * any other query (tables, columns, typed params, inlined params) to drizzle. On the store path
 * drizzle's compiler was the largest single part of Node's time. A shape seen before is followed
 * through `shapes` only (its text is there); a new one is also joined, and its text kept.
 */
export function compile(db: DbOrTx | { dialect: Dialect }, query: SQL): Compiled {
  if (inlinesParams(query)) return dialectOf(db).sqlToQuery(query);
  const params: unknown[] = [];
  let parts: string[] | null = null; // joined only for a shape without its text yet
  let at: Shape | null = shapes;
  const text = (piece: string) => {
    if (parts) parts.push(piece);
    else if (at) at = follow(at, piece);
  };
  const one = (chunk: unknown): boolean => {
    if (chunk instanceof StringChunk) {
      for (const piece of chunk.value) text(piece);
    } else if (chunk instanceof SQL) {
      if (inlinesParams(chunk) || !walk(chunk.queryChunks)) return false;
    } else if (chunk === undefined) return true;
    else if (Array.isArray(chunk)) {
      text('(');
      for (let i = 0; i < chunk.length; i++) {
        if (i > 0) text(', ');
        if (!one(chunk[i])) return false;
      }
      text(')');
    } else if (chunk === null || typeof chunk !== 'object' || chunk instanceof Date) {
      params.push(chunk);
      if (parts) parts.push(`$${params.length}`);
      else if (at) at = follow(at, params.length);
    } else return false;
    return true;
  };
  const walk = (chunks: readonly unknown[]): boolean => {
    for (const chunk of chunks) if (!one(chunk)) return false;
    return true;
  };
  if (!walk(query.queryChunks)) return dialectOf(db).sqlToQuery(query);
  const end = at as Shape | null;
  if (end?.text !== undefined) return { sql: end.text, params };
  // A new shape (or one past the bounds): the same walk again, joining its pieces.
  params.length = 0;
  parts = [];
  walk(query.queryChunks);
  const sql = parts.join('');
  if (end) end.text = sql;
  return { sql, params };
}
