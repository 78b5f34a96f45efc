import type { TenantCtx } from '../platform/contract/context';
import type { AppError } from '../platform/contract/errors';

/**
 * What a store through the batch path answers for one memory (the `memories` family's StoreOutcome,
 * narrowed): `held` when a memory policy held it for review (docs/governed-memories.md), `id` then
 * being the id it gets when approved.
 */
export type PortOutcome = { ok: true; result: { id: string }; held?: true } | { ok: false; error: AppError };

/** A store body as POST /v1/memories takes it. */
export type PortInput = Record<string, unknown>;

export interface BatchStorePort {
  /** Checks a store body as POST /v1/memories would: `null` when valid, else why not. */
  invalid(input: PortInput): string | null;
  /**
   * Stores valid bodies as POST /v1/memories/batch does, in order, each with its own outcome. With
   * `imported`, they are an import's lines: source `import` (via `import`, trust `external`), each
   * with the `ref` the file gave it (docs/memories.md#provenance-and-trust).
   */
  store(ctx: TenantCtx, inputs: PortInput[], imported?: { refs: (string | null)[] }): Promise<PortOutcome[]>;
}

let port: BatchStorePort | null = null;

/**
 * Families never import each other (docs/architecture.md#layers), yet an import must store memories
 * exactly as POST /v1/memories/batch does: quota, duplicates, events, audit. The memories family
 * hands its batch verb here when its module loads, and the importer calls it through this port.
 */
export const provideBatchStore = (p: BatchStorePort) => {
  port = p;
};

export function batchStore(): BatchStorePort {
  if (!port) throw new Error('the memories family did not provide its batch store');
  return port;
}
