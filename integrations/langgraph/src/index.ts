import {
  BaseStore,
  type GetOperation,
  type Item,
  type ListNamespacesOperation,
  type MatchCondition,
  type Operation,
  type OperationResults,
  type PutOperation,
  type SearchOperation,
} from '@langchain/langgraph';
import { Engram, type EngramOptions } from 'engram-sdk';

/**
 * For a prompt built from what this adapter reads back: engram-sdk's delimited block that tells the
 * model the memories are data, not instructions (docs/memories.md#provenance-and-trust).
 */
export { type BlockMemory, memoryBlock } from 'engram-sdk';

/** An item a search found, with its rank when the search had a query (LangGraph's `SearchItem`). */
export type SearchItem = Item & { score?: number };

/** How an EngramStore reaches engram and where its items live. */
export interface EngramStoreOptions {
  /** A client to use; or the options to make one (`apiKey`, `baseUrl`, `fetch`, …). */
  client?: Engram;
  clientOptions?: EngramOptions;
  /** Stored as each memory's `agent_id`, and reads are confined to it. */
  agentId?: string;
  /** A context space (Pro and up) for every item; reads are confined to it. */
  spaceId?: string;
  /** The tag every item of this store carries, and the stem of its namespace tags (default `langgraph`). */
  tag?: string;
  /** Importance of the stored memories, 1 to 10 (default 5). */
  importance?: number;
}

/** What an item's memory carries in `context`: where the item lives in LangGraph's terms. */
interface Envelope {
  langgraph: 1;
  namespace: string[];
  key: string;
}

interface Found {
  id: string;
  item: Item;
}

/** engram's caps on a memory (docs/memories.md): a tag is at most 64 characters, an observation 16,000. */
const TAG_MAX = 64;
const OBSERVATION_MAX = 16_000;
/** GET /v1/memories and /v1/memories/search answer at most 100 at a time. */
const PAGE_MAX = 100;

/**
 * A LangGraph `BaseStore` whose items are engram memories, so a graph's long-term memory is
 * audited, searchable and rollbackable like any other memory.
 *
 * One item is one memory: the observation is the item's value as JSON (what search ranks), the
 * `context` names its namespace and key, and tags place it: the store's tag on every item, one
 * tag per namespace prefix (`langgraph:users`, `langgraph:users.u1`, …; hashed when longer than
 * a tag may be) so a search under a prefix is one tag filter, and one hashed tag for the exact
 * namespace and key. Items are stored with `on_conflict: manual`, so two keys holding the same
 * value stay two items.
 */
export class EngramStore extends BaseStore {
  readonly client: Engram;
  readonly #agentId: string | undefined;
  readonly #spaceId: string | undefined;
  readonly #tag: string;
  readonly #importance: number | undefined;

  constructor(opts: EngramStoreOptions) {
    super();
    if (!opts.client && !opts.clientOptions) throw new TypeError('EngramStore needs `client` or `clientOptions`');
    this.client = opts.client ?? new Engram(opts.clientOptions as EngramOptions);
    this.#agentId = opts.agentId;
    this.#spaceId = opts.spaceId;
    this.#tag = opts.tag ?? 'langgraph';
    if (!/^[A-Za-z0-9_-]{1,20}$/.test(this.#tag)) throw new TypeError('`tag` is 1 to 20 letters, digits, `_` or `-`');
    this.#importance = opts.importance;
  }

  /**
   * Reads run first, together; then the writes, the last write of each key winning, as
   * LangGraph's own stores order a batch. New items go in one batch store call.
   */
  async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    const results: unknown[] = new Array(operations.length).fill(undefined);
    const puts = new Map<string, PutOperation>();
    const reads: Promise<void>[] = [];
    operations.forEach((op, i) => {
      if ('value' in op) {
        validateNamespace(op.namespace);
        puts.set(JSON.stringify([op.namespace, op.key]), op);
      } else if ('namespacePrefix' in op) {
        reads.push(this.#search(op).then((r) => void (results[i] = r)));
      } else if ('matchConditions' in op || ('limit' in op && !('namespace' in op))) {
        reads.push(this.#listNamespaces(op as ListNamespacesOperation).then((r) => void (results[i] = r)));
      } else {
        reads.push(this.#find((op as GetOperation).namespace, (op as GetOperation).key).then((r) => void (results[i] = r[0]?.item ?? null)));
      }
    });
    await Promise.all(reads);
    if (puts.size) await this.#write([...puts.values()]);
    return results as OperationResults<Op>;
  }

  async #write(ops: PutOperation[]): Promise<void> {
    const existing = await Promise.all(ops.map((op) => this.#find(op.namespace, op.key)));
    const creates: { op: PutOperation; tags: string[] }[] = [];
    const others: Promise<unknown>[] = [];
    for (const [i, op] of ops.entries()) {
      const [current, ...extra] = existing[i];
      // Two stores racing on a new key can leave two memories for it; a write folds them into one.
      for (const e of extra) others.push(this.client.memories.delete(e.id));
      if (op.value === null) {
        if (current) others.push(this.client.memories.delete(current.id));
      } else if (current) {
        others.push(this.client.memories.update(current.id, { observation: observationOf(op.value) }));
      } else {
        creates.push({ op, tags: await this.#tagsFor(op.namespace, op.key) });
      }
    }
    for (let i = 0; i < creates.length; i += PAGE_MAX) {
      const chunk = creates.slice(i, i + PAGE_MAX);
      others.push(
        this.client.memories
          .storeMany(
            chunk.map(({ op, tags }) => ({
              observation: observationOf(op.value as Record<string, unknown>),
              context: JSON.stringify({ langgraph: 1, namespace: op.namespace, key: op.key } satisfies Envelope),
              tags,
              on_conflict: 'manual' as const,
              auto_link: false,
              ...(this.#importance ? { importance: this.#importance } : {}),
              ...(this.#agentId ? { agent_id: this.#agentId } : {}),
              ...(this.#spaceId ? { space_id: this.#spaceId } : {}),
            })),
          )
          .then((answer) => {
            const failed = (answer.results as { status?: number; error?: { code?: string; message?: string } }[]).find(
              (r) => r.status !== undefined && r.status >= 300,
            );
            if (failed) throw new Error(`engram refused a store item: ${failed.error?.code ?? failed.status} ${failed.error?.message ?? ''}`.trim());
          }),
      );
    }
    await Promise.all(others);
  }

  /** The memories holding `namespace`/`key`, newest first (more than one only after a race). */
  async #find(namespace: string[], key: string): Promise<Found[]> {
    const tag = await keyTag(this.#tag, namespace, key);
    const page = await this.client.memories.list({ tags: tag, limit: 10, ...this.#scope() }).page();
    return page.memories
      .map((m) => toFound(m))
      .filter((f): f is Found => !!f && sameNamespace(f.item.namespace, namespace) && f.item.key === key)
      .sort((a, b) => b.item.updatedAt.getTime() - a.item.updatedAt.getTime());
  }

  async #search(op: SearchOperation): Promise<SearchItem[]> {
    const offset = op.offset ?? 0;
    const limit = op.limit ?? 10;
    const tag = op.namespacePrefix.length ? await prefixTag(this.#tag, op.namespacePrefix) : this.#tag;
    const keep = (item: Item) => isUnder(item.namespace, op.namespacePrefix) && matches(item.value, op.filter);
    if (op.query) {
      // One ranked answer of at most 100; the filter applies to the values in it (each hit's
      // observation), then offset and limit; only the kept hits are read whole for their keys.
      const found = await this.client.memories.search({
        q: op.query,
        mode: 'hybrid',
        tags: tag,
        limit: Math.min(PAGE_MAX, op.filter ? PAGE_MAX : offset + limit),
        ...this.#scope(),
      });
      const hits = found.memories.filter((hit) => matches(parseValue(hit.observation) ?? {}, op.filter) && parseValue(hit.observation));
      const full = await Promise.all(
        hits.slice(offset, offset + limit).map(async (hit): Promise<SearchItem | undefined> => {
          const whole = toFound(await this.client.memories.get(hit.uuid));
          return whole && keep(whole.item) ? { ...whole.item, score: hit.score } : undefined;
        }),
      );
      return full.filter((x): x is SearchItem => !!x);
    }
    const out: SearchItem[] = [];
    let seen = 0;
    for await (const m of this.client.memories.list({ tags: tag, limit: PAGE_MAX, ...this.#scope() })) {
      const found = toFound(m);
      if (!found || !keep(found.item)) continue;
      if (seen++ < offset) continue;
      out.push(found.item);
      if (out.length >= limit) break;
    }
    return out;
  }

  /** Every namespace that holds an item: one walk over the store's memories. */
  async #listNamespaces(op: ListNamespacesOperation): Promise<string[][]> {
    const all = new Map<string, string[]>();
    for await (const m of this.client.memories.list({ tags: this.#tag, limit: PAGE_MAX, ...this.#scope() })) {
      const found = toFound(m);
      if (!found) continue;
      let ns = found.item.namespace;
      if (!(op.matchConditions ?? []).every((c) => matchesCondition(c, ns))) continue;
      if (op.maxDepth !== undefined) ns = ns.slice(0, op.maxDepth);
      all.set(JSON.stringify(ns), ns);
    }
    const sorted = [...all.values()].sort((a, b) => a.join('.').localeCompare(b.join('.')));
    const offset = op.offset ?? 0;
    return sorted.slice(offset, offset + (op.limit ?? sorted.length));
  }

  #scope() {
    return { ...(this.#agentId ? { agent_id: this.#agentId } : {}), ...(this.#spaceId ? { space_id: this.#spaceId } : {}) };
  }

  async #tagsFor(namespace: string[], key: string): Promise<string[]> {
    const tags = [this.#tag];
    for (let depth = 1; depth <= namespace.length; depth++) tags.push(await prefixTag(this.#tag, namespace.slice(0, depth)));
    tags.push(await keyTag(this.#tag, namespace, key));
    // A memory carries at most 50 tags; past that depth a search under a deep prefix still finds
    // the item through a shorter prefix's tag and the namespace check in `isUnder`.
    return tags.length > 50 ? [...tags.slice(0, 49), tags[tags.length - 1]] : tags;
  }
}

/** LangGraph's namespace rules (its `validateNamespace`): non-empty labels without `.` or `:`. */
function validateNamespace(namespace: string[]): void {
  if (namespace.length === 0) throw new Error('Namespace cannot be empty.');
  for (const label of namespace) {
    if (typeof label !== 'string' || label === '' || label.includes('.') || label.includes(':'))
      throw new Error(`Invalid namespace label '${String(label)}': labels are non-empty strings without '.' or ':'.`);
  }
  if (namespace[0] === 'langgraph') throw new Error('Root label for namespace cannot be "langgraph".');
}

function observationOf(value: Record<string, unknown>): string {
  const text = JSON.stringify(value);
  if (text.length > OBSERVATION_MAX) throw new Error(`A store value is at most ${OBSERVATION_MAX} characters of JSON (got ${text.length})`);
  return text;
}

async function sha(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/** `<tag>:a.b` (labels hold no `.`, so the join is unambiguous); `<tag>#<hash>` when that is too long. */
async function prefixTag(tag: string, prefix: string[]): Promise<string> {
  const readable = `${tag}:${prefix.join('.')}`;
  return readable.length <= TAG_MAX ? readable : `${tag}#${(await sha(JSON.stringify(prefix))).slice(0, 40)}`;
}

async function keyTag(tag: string, namespace: string[], key: string): Promise<string> {
  return `${tag}#k:${(await sha(JSON.stringify([namespace, key]))).slice(0, 40)}`;
}

type MemoryLike = { uuid: string; observation: string; context?: string | null; created_at: string; updated_at?: string };

/** The item a memory holds, or undefined for a memory this store did not write. */
function toFound(m: MemoryLike): Found | undefined {
  let envelope: Envelope;
  let value: Record<string, unknown>;
  try {
    envelope = JSON.parse(m.context ?? '') as Envelope;
    value = JSON.parse(m.observation) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (envelope?.langgraph !== 1 || !Array.isArray(envelope.namespace) || typeof envelope.key !== 'string') return undefined;
  const createdAt = new Date(m.created_at);
  return {
    id: m.uuid,
    item: { namespace: envelope.namespace, key: envelope.key, value, createdAt, updatedAt: new Date(m.updated_at ?? m.created_at) },
  };
}

function parseValue(observation: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(observation) as unknown;
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function sameNamespace(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((label, i) => label === b[i]);
}

function isUnder(namespace: string[], prefix: string[]): boolean {
  return prefix.length <= namespace.length && prefix.every((label, i) => label === namespace[i]);
}

function matchesCondition(c: MatchCondition, ns: string[]): boolean {
  if (c.path.length > ns.length) return false;
  const start = c.matchType === 'prefix' ? 0 : ns.length - c.path.length;
  return c.path.every((label, i) => label === '*' || label === ns[start + i]);
}

/** LangGraph's filter: equality, or the operators `$eq $ne $gt $gte $lt $lte $in $nin` (its `compareValues`). */
function matches(value: Record<string, unknown>, filter: Record<string, unknown> | undefined): boolean {
  if (!filter) return true;
  return Object.entries(filter).every(([field, want]) => {
    const have = value[field];
    const ops = ['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin'];
    if (!want || typeof want !== 'object' || Array.isArray(want) || !Object.keys(want).every((k) => ops.includes(k)))
      return JSON.stringify(have) === JSON.stringify(want);
    return Object.entries(want as Record<string, unknown>).every(([op, v]) => {
      switch (op) {
        case '$eq':
          return JSON.stringify(have) === JSON.stringify(v);
        case '$ne':
          return JSON.stringify(have) !== JSON.stringify(v);
        case '$gt':
          return Number(have) > Number(v);
        case '$gte':
          return Number(have) >= Number(v);
        case '$lt':
          return Number(have) < Number(v);
        case '$lte':
          return Number(have) <= Number(v);
        case '$in':
          return Array.isArray(v) && v.some((x) => JSON.stringify(x) === JSON.stringify(have));
        default:
          return !Array.isArray(v) || !v.some((x) => JSON.stringify(x) === JSON.stringify(have));
      }
    });
  });
}
