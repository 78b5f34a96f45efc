import { jsonSchema, type LanguageModelMiddleware, type ToolSet, tool } from 'ai';
import { Engram, type EngramOptions, memoryBlock } from 'engram-sdk';

/** The block recalled memories go into (engram-sdk's): delimited, saying they are data, with each memory's trust. */
export { memoryBlock };

// The provider-level types, reached through `ai`'s own middleware type (no second dependency).
type Wrap = Parameters<NonNullable<LanguageModelMiddleware['wrapStream']>>[0];
type LanguageModelV4CallOptions = Wrap['params'];
type LanguageModelV4Prompt = LanguageModelV4CallOptions['prompt'];
type LanguageModelV4StreamPart = Awaited<ReturnType<Wrap['doStream']>>['stream'] extends ReadableStream<infer P> ? P : never;

/** Who the memories belong to and how to reach engram; shared by the middleware and the tools. */
export interface EngramScope {
  /** A client to use; or the options to make one (`apiKey`, `baseUrl`, `fetch`, …). */
  client?: Engram;
  clientOptions?: EngramOptions;
  /** The end user: memories are tagged `user:<userId>` and recall only sees that tag. */
  userId?: string;
  /** Stored as `agent_id`; recall only sees this agent's memories. */
  agentId?: string;
  /** A context space (Pro and up) to store into and recall from. */
  spaceId?: string;
  /** Extra tags on every stored memory. */
  tags?: string[];
}

export interface EngramMemoryOptions extends EngramScope {
  /** At most this many memories injected before a call (default 5). */
  limit?: number;
  /** Leave out memories whose score is below this (default 0). */
  minScore?: number;
  /** How long recall may take before the call goes on without memories (default 2000 ms). */
  recallTimeoutMs?: number;
  /** How long the background write may take (default 5000 ms). */
  storeTimeoutMs?: number;
  /** Store each exchange after the call (default true). */
  store?: boolean;
  /** Told about a recall or store that failed or timed out; the model call is never failed by them. */
  onError?: (error: unknown, phase: 'recall' | 'store') => void;
}

/** The middleware, plus `flush()`: wait for the exchanges still being written (before exit, in tests). */
export type EngramMiddleware = LanguageModelMiddleware & { flush(): Promise<void> };

function clientOf(scope: EngramScope): Engram {
  if (scope.client) return scope.client;
  if (!scope.clientOptions) throw new TypeError('engram-ai-sdk needs `client` or `clientOptions`');
  return new Engram(scope.clientOptions);
}

function userTag(scope: EngramScope): string | undefined {
  return scope.userId ? `user:${scope.userId}` : undefined;
}

/** Filters every recall carries: the user's tag, the agent, the space. */
function readScope(scope: EngramScope) {
  const tag = userTag(scope);
  return {
    ...(tag ? { tags: tag } : {}),
    ...(scope.agentId ? { agent_id: scope.agentId } : {}),
    ...(scope.spaceId ? { space_id: scope.spaceId } : {}),
  };
}

/** What every stored memory carries: the user's tag and extra tags, the agent, the space. */
function writeScope(scope: EngramScope, extraTags: string[] = []) {
  const tag = userTag(scope);
  const tags = [...new Set([...(tag ? [tag] : []), ...(scope.tags ?? []), ...extraTags])];
  return {
    tags,
    ...(scope.agentId ? { agent_id: scope.agentId } : {}),
    ...(scope.spaceId ? { space_id: scope.spaceId } : {}),
  };
}

function lastUserText(prompt: LanguageModelV4Prompt): string {
  for (let i = prompt.length - 1; i >= 0; i--) {
    const m = prompt[i];
    if (m.role === 'user')
      return m.content
        .filter((p) => p.type === 'text')
        .map((p) => (p as { text: string }).text)
        .join('\n')
        .trim();
  }
  return '';
}

/** The prompt with the block as a system message after the leading system messages. */
function withBlock(prompt: LanguageModelV4Prompt, block: string): LanguageModelV4Prompt {
  let at = 0;
  while (at < prompt.length && prompt[at].role === 'system') at++;
  return [...prompt.slice(0, at), { role: 'system', content: block }, ...prompt.slice(at)];
}

/**
 * AI SDK 7 language model middleware: before a call, a hybrid search on the last user message
 * adds the memories it finds as a delimited system block; after it, the user message and the
 * answer are stored in one batch write, off the response path. Recall and store fail open: an
 * engram that is down or slow (past the timeouts) leaves the call as it would be without memory.
 *
 * ```ts
 * const model = wrapLanguageModel({ model: openai('gpt-5'), middleware: engramMemory({ clientOptions, userId: 'u1' }) });
 * ```
 */
export function engramMemory(opts: EngramMemoryOptions): EngramMiddleware {
  const client = clientOf(opts);
  const pending = new Set<Promise<void>>();
  const report = (error: unknown, phase: 'recall' | 'store') => {
    try {
      opts.onError?.(error, phase);
    } catch {
      // A throwing onError must not fail the model call either.
    }
  };

  const remember = (params: LanguageModelV4CallOptions, answer: string) => {
    if (opts.store === false) return;
    // In a tool loop every step repeats the prompt: the user's message is stored by the step that
    // answers it first (the prompt ends with it), the assistant's text by whichever step says it.
    const question = params.prompt.at(-1)?.role === 'user' ? lastUserText(params.prompt) : '';
    const memories = [
      ...(question ? [{ observation: question.slice(0, 16_000), context: 'Said by the user (ai-sdk)', ...writeScope(opts, ['chat', 'role:user']) }] : []),
      ...(answer.trim()
        ? [{ observation: answer.trim().slice(0, 16_000), context: 'Answered by the assistant (ai-sdk)', ...writeScope(opts, ['chat', 'role:assistant']) }]
        : []),
    ];
    if (!memories.length) return;
    const timeoutMs = opts.storeTimeoutMs ?? 5000;
    const write: Promise<void> = Promise.resolve(client.memories.storeMany(memories, { timeoutMs, signal: AbortSignal.timeout(timeoutMs) })).then(
      (r) => {
        const failed = (r.results as { status: number; error?: unknown }[]).filter((x) => x.status >= 300);
        if (failed.length)
          report(new Error(`engram stored ${r.stored} of ${memories.length}: ${JSON.stringify(failed[0].error ?? failed[0].status)}`), 'store');
      },
      (e: unknown) => report(e, 'store'),
    );
    pending.add(write);
    void write.finally(() => pending.delete(write));
  };

  return {
    async transformParams({ params }) {
      const q = lastUserText(params.prompt);
      if (!q) return params;
      const timeoutMs = opts.recallTimeoutMs ?? 2000;
      try {
        const found = await client.memories.search(
          { q: q.slice(0, 2000), mode: 'hybrid', limit: opts.limit ?? 5, min_score: opts.minScore ?? 0, ...readScope(opts) },
          { timeoutMs, signal: AbortSignal.timeout(timeoutMs) },
        );
        if (!found.memories.length) return params;
        return { ...params, prompt: withBlock(params.prompt, memoryBlock(found.memories)) };
      } catch (e) {
        report(e, 'recall');
        return params;
      }
    },

    async wrapGenerate({ doGenerate, params }) {
      const result = await doGenerate();
      const text = result.content
        .filter((c) => c.type === 'text')
        .map((c) => (c as { text: string }).text)
        .join('');
      remember(params, text);
      return result;
    },

    async wrapStream({ doStream, params }) {
      const result = await doStream();
      let text = '';
      const tap = new TransformStream<LanguageModelV4StreamPart, LanguageModelV4StreamPart>({
        transform(part, controller) {
          if (part.type === 'text-delta') text += part.delta;
          controller.enqueue(part);
        },
        flush() {
          remember(params, text);
        },
      });
      return { ...result, stream: result.stream.pipeThrough(tap) };
    },

    async flush() {
      while (pending.size) await Promise.all([...pending]);
    },
  };
}

export interface EngramToolsOptions extends EngramScope {
  /** At most this many memories a recall returns (default 5). */
  limit?: number;
}

/**
 * `remember`, `recall` and `forget` as AI SDK tools, for a model that decides itself what to keep.
 * Each works within the scope given here (user tag, agent, space): the model names no tenant.
 */
export function engramTools(opts: EngramToolsOptions): ToolSet {
  const client = clientOf(opts);
  return {
    remember: tool({
      description: 'Store a fact worth remembering across conversations (a preference, a decision, a detail about the user).',
      inputSchema: jsonSchema<{ text: string; tags?: string[] }>({
        type: 'object',
        properties: {
          text: { type: 'string', minLength: 1, maxLength: 16000, description: 'The fact, as one self-contained sentence' },
          tags: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 64 }, maxItems: 10, description: 'Optional labels' },
        },
        required: ['text'],
        additionalProperties: false,
      }),
      execute: async ({ text, tags }) => {
        const stored = await client.memories.store({ observation: text, ...writeScope(opts, tags ?? []) });
        return { id: stored.id };
      },
    }),
    recall: tool({
      description: 'Search long-term memory for facts relevant to a question; returns the best matches with their ids.',
      inputSchema: jsonSchema<{ query: string; limit?: number }>({
        type: 'object',
        properties: {
          query: { type: 'string', minLength: 1, maxLength: 2000, description: 'What to look for, in natural language' },
          limit: { type: 'integer', minimum: 1, maximum: 20, description: 'At most this many (default 5)' },
        },
        required: ['query'],
        additionalProperties: false,
      }),
      execute: async ({ query, limit }) => {
        const found = await client.memories.search({ q: query, mode: 'hybrid', limit: limit ?? opts.limit ?? 5, ...readScope(opts) });
        // Each with its provenance, so the model can weigh an external memory as such.
        return { memories: found.memories.map((m) => ({ id: m.uuid, text: m.observation, score: m.score, trust: m.trust, source: m.source.kind })) };
      },
    }),
    forget: tool({
      description: 'Delete one memory by the id that recall returned, when the user asks to forget it or it is wrong.',
      inputSchema: jsonSchema<{ id: string }>({
        type: 'object',
        properties: { id: { type: 'string', minLength: 1, description: 'The memory id from recall' } },
        required: ['id'],
        additionalProperties: false,
      }),
      execute: async ({ id }) => {
        // Only a memory inside this scope may be forgotten: a model cannot reach past its user or agent.
        const memory = await client.memories.get(id);
        const tag = userTag(opts);
        if ((tag && !memory.tags.includes(tag)) || (opts.agentId && memory.agent_id !== opts.agentId) || (opts.spaceId && memory.space_id !== opts.spaceId))
          return { deleted: false, reason: 'not a memory of this user or agent' };
        await client.memories.delete(id);
        return { deleted: true };
      },
    }),
  };
}
