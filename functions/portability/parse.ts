import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { MAX_SOURCE_REF } from '../../shared/memory/provenance';
import { AppError } from '../../shared/platform/contract/errors';
import { findInJson } from '../../shared/platform/contract/input-text';
import { parseTimestamp } from '../../shared/platform/contract/time';
import { HeaderLine, issuesOf, RECORD_LINES, type RecordType, SUPPORTED_VERSIONS, TrailerLine } from './format';
import { readMem0 } from './mem0';

export type ImportFormat = 'bundle' | 'jsonl' | 'mem0';

/** A line's refusal, as the answer lists it. */
export interface LineError {
  line: number;
  /** INVALID_JSON, INVALID_RECORD, UNKNOWN_TYPE, LINE_TOO_LONG, INVALID_TEXT, FORBIDDEN, or the error code a create verb answered. */
  code: string;
  message: string;
}

/** A valid line: what to restore, and the source id that makes importing it twice a no-op. */
export type Record_ =
  | { line: number; kind: 'memory'; source: string; body: Record<string, unknown>; spaceSource: string | null; ref: string | null }
  | { line: number; kind: 'space' | 'policy' | 'agent' | 'pack' | 'triple'; source: string; data: Record<string, unknown> }
  | { line: number; kind: 'webhook'; source: string };

/** The most per-line errors an answer lists; `errors_total` counts them all. */
export const MAX_ERRORS = 1000;

/** Per-line errors in bounded memory: the first MAX_ERRORS by line number, and how many in all. */
export class LineErrors {
  total = 0;
  private kept: LineError[] = [];

  add(error: LineError) {
    this.total += 1;
    this.kept.push(error);
    if (this.kept.length >= 2 * MAX_ERRORS) this.kept = this.list();
  }

  list(): LineError[] {
    return this.kept.sort((a, b) => a.line - b.line).slice(0, MAX_ERRORS);
  }
}

/** Records reach `sink` this many at a time, while the body is still being read. */
const SINK_BATCH = 500;

export interface Parsed {
  lines: number;
}

/** Past this, a single line is refused rather than buffered: no valid record comes near it. */
export const MAX_LINE_BYTES = 1024 * 1024;

const hex = (text: string) => bytesToHex(sha256(new TextEncoder().encode(text)));
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
const stripUrn = (v: unknown) => (typeof v === 'string' ? v.replace(/^urn:uuid:/, '') : null);
const pick = (o: Record<string, unknown>, keys: string[]) => Object.fromEntries(keys.filter((k) => o[k] !== undefined && o[k] !== null).map((k) => [k, o[k]]));

/** A ref as a memory's source may hold it: cut to MAX_SOURCE_REF, none when empty. */
const bounded = (ref: string) => ref.trim().slice(0, MAX_SOURCE_REF) || null;
/** The `ref` of an exported memory's `source` (a bundle or JSON export line), kept by the import. */
const refOf = (source: unknown) => (isObject(source) && typeof source.ref === 'string' ? bounded(source.ref) : null);

const invalid = (line: number, message: string): LineError => ({ line, code: 'INVALID_RECORD', message });

/** One JSONL line of GET /v1/memories/export?format=json or `{observation|text, tags?, ...}`. */
function jsonlRecord(line: number, o: Record<string, unknown>): Record_ | LineError {
  const text = str(o.observation) ?? str(o.text);
  if (text === undefined) return invalid(line, 'observation (or text) must be a string');
  const id = str(o.uuid) ?? str(o.id);
  const body = { observation: text, ...pick(o, ['tags', 'importance', 'context', 'agent_id', 'space_id']), auto_link: false };
  return { line, kind: 'memory', source: id ? `jsonl:${stripUrn(id)}` : `text:${hex(text)}`, body, spaceSource: null, ref: refOf(o.source) };
}

/** Items of a mem0 file that are not imported, by why (docs/portability.md#mem0). */
export interface Skipped {
  /** Marked `deleted_at` in mem0. */
  deleted: number;
  /** Their `expiration_date` had passed. */
  expired: number;
  /** Relations the tier has no knowledge graph for. */
  relation: number;
}
export const noneSkipped = (): Skipped => ({ deleted: 0, expired: 0, relation: 0 });

/** A time of a mem0 item as ISO 8601 (mem0 writes microseconds, sometimes no offset: UTC); undefined when absent or not a time. */
const timeOf = (v: unknown) => (typeof v === 'string' ? (parseTimestamp(v)?.toISOString() ?? undefined) : undefined);

/**
 * One mem0 memory (`get_all` / export item): `memory` is the text, `user_id` becomes a tag,
 * `run_id` a `run:<id>` tag, `metadata` the context, `created_at` the event time and
 * `expiration_date` the expiry. An item marked `deleted_at`, or whose expiry has passed, is
 * skipped and counted; its `relations`, if any, come out as triples (mem0Relation).
 */
function mem0Record(line: number, o: Record<string, unknown>, now: Date, skipped: Skipped): Record_[] | LineError {
  if (o.deleted_at !== undefined && o.deleted_at !== null && o.deleted_at !== false) {
    skipped.deleted += 1;
    return [];
  }
  const text = str(o.memory);
  if (text === undefined) return invalid(line, 'memory must be a string');
  const expires = timeOf(o.expiration_date);
  if (expires && Date.parse(expires) <= now.getTime()) {
    skipped.expired += 1;
    return [];
  }
  const id = str(o.id);
  const tags = [...(Array.isArray(o.categories) ? o.categories.filter((c): c is string => typeof c === 'string') : [])];
  if (str(o.user_id)) tags.push(`user:${o.user_id as string}`);
  if (str(o.run_id)) tags.push(`run:${o.run_id as string}`);
  const metadata = isObject(o.metadata) && Object.keys(o.metadata).length ? JSON.stringify(o.metadata) : undefined;
  const occurred = timeOf(o.created_at);
  const body = {
    observation: text,
    tags,
    ...(metadata ? { context: metadata } : {}),
    ...(str(o.agent_id) ? { agent_id: o.agent_id } : {}),
    ...(occurred ? { occurred_at: occurred } : {}),
    ...(expires ? { expires_at: expires } : {}),
    auto_link: false,
  };
  const memory: Record_ = {
    line,
    kind: 'memory',
    source: id ? `mem0:${id}` : `text:${hex(text)}`,
    body,
    spaceSource: null,
    ref: id ? bounded(`mem0:${id}`) : null,
  };
  const relations = Array.isArray(o.relations) ? o.relations.map((r) => mem0Relation(line, r)) : [];
  const bad = relations.find((r): r is LineError => 'code' in r);
  return bad ?? [memory, ...(relations as Record_[])];
}

/** A mem0 graph relation `{source, relationship, target|destination}` (with `*_type`, `score`) as a knowledge triple line. */
function mem0Relation(line: number, r: unknown): Record_ | LineError {
  if (!isObject(r)) return invalid(line, 'a relation must be a JSON object');
  const [subject, predicate, object] = [str(r.source), str(r.relationship) ?? str(r.relation), str(r.target) ?? str(r.destination)];
  if (!subject || !predicate || !object) return invalid(line, 'a relation needs source, relationship and target strings');
  const data = {
    subject: { name: subject, ...(str(r.source_type) ? { type: r.source_type } : {}) },
    predicate,
    object: { name: object, ...(str(r.target_type ?? r.destination_type) ? { type: r.target_type ?? r.destination_type } : {}) },
    ...(typeof r.score === 'number' && r.score >= 0 && r.score <= 1 ? { confidence: r.score } : {}),
  };
  return { line, kind: 'triple', source: `mem0-relation:${hex(JSON.stringify([subject, predicate, object]))}`, data };
}

const RESTORED = ['space', 'policy', 'agent', 'pack', 'triple'] as const;

/** One record line of a bundle (GET /v1/export/bundle), checked against its line schema (format.ts). */
function bundleRecord(line: number, o: Record<string, unknown>): Record_ | LineError {
  const type = o.type;
  if (typeof type !== 'string' || !Object.hasOwn(RECORD_LINES, type))
    return { line, code: 'UNKNOWN_TYPE', message: `unknown record type ${JSON.stringify(type)?.slice(0, 40)}` };
  const parsed = RECORD_LINES[type as RecordType].safeParse(o);
  if (!parsed.success) return invalid(line, `a ${type} line: ${issuesOf(parsed.error)}`);
  const r = parsed.data;
  switch (r.type) {
    case 'memory': {
      // The time it was learned in the exported account is when it happened, unless the line says otherwise.
      const occurred = timeOf(r.occurred_at) ?? timeOf(r.created_at);
      const body = {
        observation: r.text,
        ...pick(r, ['tags', 'importance', 'context', 'agent_id']),
        ...(occurred ? { occurred_at: occurred } : {}),
        auto_link: false,
      };
      return {
        line,
        kind: 'memory',
        source: `bundle:${stripUrn(r.id)}`,
        body,
        spaceSource: r.space_id ? `space:${stripUrn(r.space_id)}` : null,
        ref: refOf(r.source),
      };
    }
    case 'webhook':
      return { line, kind: 'webhook', source: `webhook:${r.id}` };
    default: {
      const kind = r.type as (typeof RESTORED)[number];
      const key = r.type === 'agent' ? r.agent_id : stripUrn((r as { id: string }).id);
      return { line, kind, source: `${kind}:${key}`, data: r as Record<string, unknown> };
    }
  }
}

/**
 * Reads the body line by line, at most `maxBytes` (413 past it), handing the valid records to
 * `sink` a batch at a time and the refused lines to `errors`, so memory stays bounded whatever the
 * size (a mem0 file, one JSON document, is read item by item: ./mem0.ts). A bundle's lines are hashed as they
 * arrive, each one once the next has come, so the last line (the trailer) is left out; the trailer
 * must then match the line count and the hash, else the whole file is refused: the caller has
 * written nothing the tenant can see yet.
 */
export async function parseBody(
  body: ReadableStream<Uint8Array> | null,
  format: ImportFormat,
  maxBytes: number,
  errors: LineErrors,
  sink: (records: Record_[]) => Promise<void>,
  mem0: { now: Date; skipped: Skipped } = { now: new Date(), skipped: noneSkipped() },
): Promise<Parsed> {
  const out: Parsed = { lines: 0 };
  let records: Record_[] = [];
  const flush = async (force: boolean) => {
    if (records.length && (force || records.length >= SINK_BATCH)) {
      const batch = records;
      records = [];
      await sink(batch);
    }
  };
  if (format === 'mem0') {
    const onItem = (item: unknown, line: number, relation: boolean) => {
      const found = !isObject(item)
        ? invalid(line, `${relation ? 'a relation' : 'an item'} must be a JSON object`)
        : relation
          ? mem0Relation(line, item)
          : mem0Record(line, item, mem0.now, mem0.skipped);
      if ('code' in found) errors.add(found);
      else records.push(...(Array.isArray(found) ? found : [found]));
    };
    out.lines = await readMem0(body, { maxBytes, tooLarge: () => tooLarge(maxBytes) }, onItem, () => flush(false));
    await flush(true);
    return out;
  }
  const hash = sha256.create();
  let pending: Uint8Array | null = null;
  let header: Record<string, unknown> | null = null;
  let last: { text: string; line: number } | null = null;
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const onLine = (bytes: Uint8Array) => {
    out.lines += 1;
    const line = out.lines;
    if (format === 'bundle') {
      if (pending) hash.update(pending);
      pending = bytes;
    }
    let text: string;
    try {
      text = decoder.decode(bytes).replace(/\r?\n$/, '');
    } catch {
      errors.add({ line, code: 'INVALID_TEXT', message: 'the line is not UTF-8' });
      return;
    }
    if (!text.trim()) return;
    if (text.includes('\u0000')) {
      errors.add({ line, code: 'INVALID_TEXT', message: 'the line holds a NUL character' });
      return;
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      errors.add({ line, code: 'INVALID_JSON', message: 'the line is not JSON' });
      return;
    }
    if (!isObject(value)) {
      errors.add(invalid(line, 'the line must be a JSON object'));
      return;
    }
    // An escaped NUL or lone surrogate anywhere (text, metadata, a policy field) is this line's error, not the import's.
    const unsafe = findInJson(value);
    if (unsafe) {
      errors.add({ line, code: 'INVALID_TEXT', message: `${unsafe.path} ${unsafe.problem}` });
      return;
    }
    if (format === 'bundle') {
      if (line === 1) {
        header = value;
        return;
      }
      if (value.type === 'trailer') {
        last = { text, line };
        return;
      }
    }
    const record = format === 'bundle' ? bundleRecord(line, value) : jsonlRecord(line, value);
    if ('code' in record) errors.add(record);
    else records.push(record);
  };
  await splitLines(
    body,
    maxBytes,
    onLine,
    (line) => {
      out.lines += 1;
      errors.add({ line: out.lines, code: 'LINE_TOO_LONG', message: `the line is longer than ${line} bytes` });
    },
    () => flush(false),
  );
  if (format === 'bundle') checkBundle(header, last, out.lines, pending, hash);
  await flush(true);
  return out;
}

function checkBundle(
  header: Record<string, unknown> | null,
  trailer: { text: string; line: number } | null,
  lines: number,
  pending: Uint8Array | null,
  hash: ReturnType<typeof sha256.create>,
) {
  const parsed = HeaderLine.safeParse(header);
  if (!parsed.success) throw refused('the first line is not an engram bundle header');
  if (!SUPPORTED_VERSIONS.includes(parsed.data.version))
    throw refused(`bundle version ${parsed.data.version} is not supported (${SUPPORTED_VERSIONS.join(', ')} are)`);
  if (!trailer || trailer.line !== lines || !pending) throw refused('the bundle has no trailer line: it is truncated');
  const read = TrailerLine.safeParse(JSON.parse(trailer.text));
  if (!read.success) throw refused(`the trailer is not valid: ${issuesOf(read.error)}`);
  const t = read.data;
  if (t.lines !== lines - 1) throw refused(`the trailer counts ${JSON.stringify(t.lines)} lines, the bundle has ${lines - 1}`);
  if (t.sha256 !== bytesToHex(hash.digest())) throw refused('the SHA-256 of the bundle does not match its trailer');
}

const refused = (why: string) => new AppError('BUNDLE_INTEGRITY_FAILED', `The bundle was refused, nothing was written: ${why}`);

export const tooLarge = (maxBytes: number) => new AppError('PAYLOAD_TOO_LARGE', `The import body exceeds ${maxBytes} bytes; nothing was written`);

async function splitLines(
  body: ReadableStream<Uint8Array> | null,
  maxBytes: number,
  onLine: (bytes: Uint8Array) => void,
  onTooLong: (max: number) => void,
  afterChunk: () => Promise<void>,
) {
  if (!body) return;
  let total = 0;
  let carry: Uint8Array[] = [];
  let carried = 0;
  let skipping = false;
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      throw tooLarge(maxBytes);
    }
    let start = 0;
    for (let i = value.indexOf(10); i !== -1; i = value.indexOf(10, start)) {
      const piece = value.subarray(start, i + 1);
      if (!skipping) onLine(carried ? concat([...carry, piece], carried + piece.byteLength) : piece.slice());
      skipping = false;
      carry = [];
      carried = 0;
      start = i + 1;
    }
    if (start < value.byteLength && !skipping) {
      carry.push(value.slice(start));
      carried += value.byteLength - start;
      if (carried > MAX_LINE_BYTES) {
        onTooLong(MAX_LINE_BYTES);
        carry = [];
        carried = 0;
        skipping = true;
      }
    }
    await afterChunk();
  }
  if (carried && !skipping) onLine(concat(carry, carried));
}

function concat(parts: Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}
