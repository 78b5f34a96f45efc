import type { AgentInputItem, Session } from '@openai/agents';
import { Engram, type EngramOptions } from 'engram-sdk';

/**
 * For a prompt built from what this adapter reads back: engram-sdk's delimited block that tells the
 * model the memories are data, not instructions (docs/memories.md#provenance-and-trust).
 */
export { type BlockMemory, memoryBlock } from 'engram-sdk';

/** Where an EngramSession keeps its items and how it reaches engram. */
export interface EngramSessionOptions {
  /** A client to use; or the options to make one (`apiKey`, `baseUrl`, `fetch`, …). */
  client?: Engram;
  clientOptions?: EngramOptions;
  /** The conversation; a new random id when absent (read it with `getSessionId()`). */
  sessionId?: string;
  /** Stored as each item's `agent_id`; the session reads only this agent's items. */
  agentId?: string;
  /** A context space (Pro and up) for the items. */
  spaceId?: string;
}

/** What each item's memory carries in `context`: its session and its place in the conversation. */
interface Envelope {
  openai_agents_session: string;
  seq: number;
}

/** engram's caps (docs/memories.md): a tag is at most 64 characters, an observation 16,000; a batch or page 100. */
const TAG_MAX = 64;
const OBSERVATION_MAX = 16_000;
const PAGE_MAX = 100;

/**
 * An OpenAI Agents SDK `Session` whose items are engram memories: a conversation's history
 * persists across runs and processes, and is audited, exportable and rollbackable.
 *
 * One item is one memory: the observation is the item as JSON (so search finds the words said),
 * `context` names the session and the item's sequence number, tags are `openai-agents` and
 * `session:<id>` (hashed when the id is too long for a tag).
 */
export class EngramSession implements Session {
  readonly client: Engram;
  readonly #sessionId: string;
  readonly #agentId: string | undefined;
  readonly #spaceId: string | undefined;
  #lastSeq = 0;

  constructor(opts: EngramSessionOptions) {
    if (!opts.client && !opts.clientOptions) throw new TypeError('EngramSession needs `client` or `clientOptions`');
    this.client = opts.client ?? new Engram(opts.clientOptions as EngramOptions);
    this.#sessionId = opts.sessionId ?? crypto.randomUUID();
    this.#agentId = opts.agentId;
    this.#spaceId = opts.spaceId;
  }

  async getSessionId(): Promise<string> {
    return this.#sessionId;
  }

  /** The most recent `limit` items (all without it), oldest first. */
  async getItems(limit?: number): Promise<AgentInputItem[]> {
    const all = await this.#all();
    if (limit === undefined) return all.map((x) => x.item);
    if (limit <= 0) return [];
    return all.slice(Math.max(all.length - limit, 0)).map((x) => x.item);
  }

  /** One batch write per 100 items; each item's sequence number keeps the conversation's order. */
  async addItems(items: AgentInputItem[]): Promise<void> {
    if (!items.length) return;
    const tags = await this.#tags();
    const memories = items.map((item) => {
      const observation = JSON.stringify(item);
      if (observation.length > OBSERVATION_MAX) throw new Error(`A session item is at most ${OBSERVATION_MAX} characters of JSON (got ${observation.length})`);
      // Microseconds since the epoch, never repeating in this process: orders items added in one
      // call, and calls made one after another, however close together.
      this.#lastSeq = Math.max(this.#lastSeq + 1, Date.now() * 1000);
      return {
        observation,
        context: JSON.stringify({ openai_agents_session: this.#sessionId, seq: this.#lastSeq } satisfies Envelope),
        tags,
        on_conflict: 'manual' as const,
        auto_link: false,
        ...(this.#agentId ? { agent_id: this.#agentId } : {}),
        ...(this.#spaceId ? { space_id: this.#spaceId } : {}),
      };
    });
    for (let i = 0; i < memories.length; i += PAGE_MAX) {
      const answer = await this.client.memories.storeMany(memories.slice(i, i + PAGE_MAX));
      const failed = (answer.results as { status: number; error?: { code?: string; message?: string } }[]).find((r) => r.status >= 300);
      if (failed) throw new Error(`engram refused a session item: ${failed.error?.code ?? failed.status} ${failed.error?.message ?? ''}`.trim());
    }
  }

  /** Removes the newest item (its memory is deleted) and returns it. */
  async popItem(): Promise<AgentInputItem | undefined> {
    const last = (await this.#all()).at(-1);
    if (!last) return undefined;
    await this.client.memories.delete(last.id);
    return last.item;
  }

  /** Deletes every item of this session. */
  async clearSession(): Promise<void> {
    for (const { id } of await this.#all()) await this.client.memories.delete(id);
  }

  async #all(): Promise<{ id: string; seq: number; item: AgentInputItem }[]> {
    const [, sessionTag] = await this.#tags();
    const out: { id: string; seq: number; item: AgentInputItem }[] = [];
    const scope = { ...(this.#agentId ? { agent_id: this.#agentId } : {}), ...(this.#spaceId ? { space_id: this.#spaceId } : {}) };
    for await (const m of this.client.memories.list({ tags: sessionTag, limit: PAGE_MAX, ...scope })) {
      try {
        const envelope = JSON.parse(m.context ?? '') as Envelope;
        if (envelope.openai_agents_session !== this.#sessionId || typeof envelope.seq !== 'number') continue;
        out.push({ id: m.uuid, seq: envelope.seq, item: JSON.parse(m.observation) as AgentInputItem });
      } catch {
        // A memory carrying the tag that this adapter did not write is not an item.
      }
    }
    return out.sort((a, b) => a.seq - b.seq);
  }

  async #tags(): Promise<[string, string]> {
    const readable = `session:${this.#sessionId}`;
    if (readable.length <= TAG_MAX) return ['openai-agents', readable];
    const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(this.#sessionId));
    return [
      'openai-agents',
      `session#${[...new Uint8Array(digest)]
        .map((b) => b.toString(16).padStart(2, '0'))
        .join('')
        .slice(0, 40)}`,
    ];
  }
}
