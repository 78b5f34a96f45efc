import { Tokenizer, TokenParser, type TokenParserOptions, TokenType } from '@streamparser/json';
import { AppError } from '../../shared/platform/contract/errors';
import { nextMacrotask } from '../../shared/platform/limits/streamed-body';

/**
 * A mem0 export is one JSON document, `{"results": [...]}` (or `memories`) or a bare array, read
 * here as a stream: its items reach `onItem` one by one as the bytes arrive, so memory holds one
 * item at a time whatever the file's size, and the work stops for a turn of the event loop every
 * slice, so one large file does not hold up other accounts' requests (docs/portability.md#limits).
 */

/** Items between two turns of the event loop... */
const SLICE_ITEMS = 200;
/** ...or bytes, for a file whose items are large or missing. */
const SLICE_BYTES = 256 * 1024;
/** The parser is fed this much at a time, so a large chunk of the body still yields between slices. */
const FEED_BYTES = 16 * 1024;
/** Past this, one item (or anything outside the items) is refused rather than buffered, as a JSONL line is. */
export const MAX_MEM0_ITEM_BYTES = 1024 * 1024;

const ARRAY_KEYS = ['results', 'memories'];
/** A graph export's relations, beside the items: `{"results": [...], "relations": [{source, relationship, target}]}`. */
const RELATIONS_KEY = 'relations';

const notMem0 = (why: string, detail: string) =>
  new AppError('VALIDATION_ERROR', `${why}; nothing was written`, { details: [{ path: 'body', message: detail }] });
const notJson = () => notMem0('The mem0 file is not JSON', 'not JSON');
const itemTooLarge = () => notMem0(`A mem0 item is larger than ${MAX_MEM0_ITEM_BYTES} bytes`, 'item too large');
const noArray = () => notMem0('A mem0 file is {"results": [...]} or an array', 'no results array');

/**
 * Reads the mem0 document of `body`, at most `limit.maxBytes` (else `limit.tooLarge()`), calling
 * `onItem` with each item and its position (from 1) and awaiting `afterSlice` between slices.
 * Answers how many items there were. A file that is not JSON, not of that shape, or holds an item
 * over MAX_MEM0_ITEM_BYTES is refused whole (the caller discards what it staged).
 */
export async function readMem0(
  body: ReadableStream<Uint8Array> | null,
  limit: { maxBytes: number; tooLarge: () => Error },
  onItem: (item: unknown, position: number, relation: boolean) => void,
  afterSlice: () => Promise<void>,
): Promise<number> {
  const tokenizer = new Tokenizer();
  let parser: TokenParser | null = null;
  const state: { failed: Error | null } = { failed: null };
  const check = () => {
    if (state.failed) throw state.failed instanceof AppError ? state.failed : notJson();
  };
  let items = 0;
  let depth = 0;
  let key: string | null = null;
  let pendingKey: string | null = null;
  /** The array of the root object whose elements are the items: the first `results` or `memories`. */
  let itemsKey: string | null = null;
  let rootIsArray = false;
  /** Where the token being parsed starts, and where the last item ended, in bytes from the start. */
  let tokenOffset = 0;
  let itemEnd = 0;

  const startParser = (options: TokenParserOptions) => {
    parser = new TokenParser({ ...options, keepStack: false });
    parser.onValue = ({ value, stack }) => {
      const relation = !rootIsArray && stack[1]?.key === RELATIONS_KEY;
      if (!rootIsArray && !relation && stack[1]?.key !== itemsKey) return;
      items += 1;
      if (tokenOffset - itemEnd > MAX_MEM0_ITEM_BYTES) state.failed ??= itemTooLarge();
      itemEnd = tokenOffset;
      onItem(value, items, relation);
    };
    parser.onError = (err) => tokenizer.error(err);
    parser.onEnd = () => {
      if (!tokenizer.isEnded) tokenizer.end();
    };
  };
  tokenizer.onError = (err) => {
    state.failed ??= err;
  };
  tokenizer.onEnd = () => {
    if (parser && !parser.isEnded) parser.end();
  };
  tokenizer.onToken = (info) => {
    if (!parser) {
      if (info.token === TokenType.LEFT_BRACKET) {
        rootIsArray = true;
        startParser({ paths: ['$.*'] });
      } else if (info.token === TokenType.LEFT_BRACE) startParser({ paths: [...ARRAY_KEYS, RELATIONS_KEY].map((k) => `$.${k}.*`) });
      else {
        state.failed ??= noArray();
        return;
      }
    }
    // Which key of the root object each value is under, to find the items' array.
    if (depth === 1) {
      if (info.token === TokenType.STRING) pendingKey = String(info.value);
      else if (info.token === TokenType.COLON) key = pendingKey;
      else if (info.token === TokenType.COMMA) key = null;
      else if (info.token === TokenType.LEFT_BRACKET && key && ARRAY_KEYS.includes(key)) itemsKey ??= key;
    }
    if (info.token === TokenType.LEFT_BRACE || info.token === TokenType.LEFT_BRACKET) depth += 1;
    else if (info.token === TokenType.RIGHT_BRACE || info.token === TokenType.RIGHT_BRACKET) depth -= 1;
    tokenOffset = info.offset;
    (parser as TokenParser | null)?.write(info);
  };

  let total = 0;
  let fed = 0;
  let itemsBefore = 0;
  let sliceItems = 0;
  let sliceBytes = 0;
  const feed = async (bytes: Uint8Array) => {
    for (let at = 0; at < bytes.byteLength; at += FEED_BYTES) {
      const piece = bytes.subarray(at, at + FEED_BYTES);
      if (tokenizer.isEnded) {
        if (piece.some((b) => b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09)) throw notJson();
        continue;
      }
      tokenizer.write(piece);
      check();
      fed += piece.byteLength;
      if (fed - itemEnd > MAX_MEM0_ITEM_BYTES) throw itemTooLarge();
      sliceItems += items - itemsBefore;
      sliceBytes += piece.byteLength;
      itemsBefore = items;
      if (sliceItems >= SLICE_ITEMS || sliceBytes >= SLICE_BYTES) {
        sliceItems = 0;
        sliceBytes = 0;
        await afterSlice();
        await nextMacrotask();
      }
    }
  };

  if (body) {
    const reader = body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        total += value.byteLength;
        if (total > limit.maxBytes) throw limit.tooLarge();
        await feed(value);
      }
    } catch (err) {
      await reader.cancel().catch(() => {});
      throw err;
    }
  }
  if (!tokenizer.isEnded) tokenizer.end();
  check();
  if (!parser) throw notJson();
  if (!rootIsArray && itemsKey === null) throw noArray();
  return items;
}
